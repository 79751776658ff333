"""The 1F1B schedule: order, dependences between stages, in-flight bound, no deadlock."""

from __future__ import annotations

import pytest

from nxcc.driver.train.schedule import max_in_flight, one_f_one_b, stage_ops

SHAPES = [(1, 1), (1, 4), (2, 1), (2, 2), (2, 8), (3, 5), (4, 4), (4, 2), (5, 12)]


@pytest.mark.parametrize(("stages", "m"), SHAPES)
def test_each_micro_batch_once_forward_before_backward(stages: int, m: int) -> None:
    for ops in one_f_one_b(stages, m):
        assert sorted(ops) == sorted([("F", i) for i in range(m)] + [("B", i) for i in range(m)])
        for i in range(m):
            assert ops.index(("F", i)) < ops.index(("B", i))
        assert [i for k, i in ops if k == "F"] == list(range(m))
        assert [i for k, i in ops if k == "B"] == list(range(m))


@pytest.mark.parametrize(("stages", "m"), SHAPES)
def test_in_flight_bound(stages: int, m: int) -> None:
    for s, ops in enumerate(one_f_one_b(stages, m)):
        assert max_in_flight(ops) <= stages - s
        assert max_in_flight(ops) == min(stages - s, m)


def _simulate(stages: int, m: int) -> list[tuple[int, str, int]]:
    """Run the schedule with blocking receives: a forward of m on stage s needs stage s-1's
    forward of m done, a backward stage s+1's backward. The global order, or an assertion
    on deadlock."""
    order = one_f_one_b(stages, m)
    pos = [0] * stages
    done: set[tuple[int, str, int]] = set()
    trace = []
    while any(p < len(o) for p, o in zip(pos, order, strict=True)):
        moved = False
        for s in range(stages):
            if pos[s] == len(order[s]):
                continue
            kind, i = order[s][pos[s]]
            need = (s - 1, "F", i) if kind == "F" else (s + 1, "B", i)
            if (kind == "F" and s == 0) or (kind == "B" and s == stages - 1) or need in done:
                done.add((s, kind, i))
                trace.append((s, kind, i))
                pos[s] += 1
                moved = True
        assert moved, f"deadlock at {pos}"
    return trace


@pytest.mark.parametrize(("stages", "m"), SHAPES)
def test_cross_stage_order_and_no_deadlock(stages: int, m: int) -> None:
    trace = _simulate(stages, m)
    at = {event: n for n, event in enumerate(trace)}
    for s in range(stages - 1):
        for i in range(m):
            assert at[(s, "F", i)] < at[(s + 1, "F", i)]
            assert at[(s + 1, "B", i)] < at[(s, "B", i)]


def test_known_order() -> None:
    assert stage_ops(0, 3, 4) == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("F", 3), ("B", 1),
                                  ("B", 2), ("B", 3)]
    assert stage_ops(2, 3, 4) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2),
                                  ("F", 3), ("B", 3)]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="stage 3"):
        stage_ops(3, 3, 1)
    with pytest.raises(ValueError, match="micro-batch"):
        stage_ops(0, 1, 0)
