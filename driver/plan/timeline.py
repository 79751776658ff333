"""The 1F1B schedule of one step in time: when each stage runs each forward and backward.

`one_f_one_b_timeline(forward, backward, transfer, micro_batches)` plays the schedule the
engine runs (`train.schedule.stage_ops`) with each stage's durations: stage s's forward of
micro-batch m starts when the stage is free and stage s-1's forward of m has arrived
(its end plus `transfer[s-1]`, the activation's time on the link between them); its
backward when the stage is free and stage s+1's backward of m has arrived. Sends do not
block the sender (the engine's sends are asynchronous). On the last stage the forward is
the whole `forward_backward` program and the backward only hands the gradient back
(duration 0), as the engine runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.driver.train.schedule import stage_ops


@dataclass(frozen=True)
class Interval:
    """Stage `stage` ran `kind` ("F" or "B") of micro-batch `micro_batch` over
    [start, end) seconds from the step's start."""

    stage: int
    kind: str
    micro_batch: int
    start: float
    end: float


def one_f_one_b_timeline(forward: list[float], backward: list[float], transfer: list[float],
                         micro_batches: int) -> list[list[Interval]]:
    """Every stage's intervals, in its order (see the module docstring). `transfer[s]`:
    seconds to hand an activation (or its gradient) between stages s and s + 1."""
    stages = len(forward)
    orders = [stage_ops(s, stages, micro_batches) for s in range(stages)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * stages
    position = [0] * stages
    out: list[list[Interval]] = [[] for _ in range(stages)]
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(stages):
            while position[s] < len(orders[s]):
                kind, m = orders[s][position[s]]
                ready = _ready(done, kind, s, m, stages, transfer)
                if ready is None:
                    break
                start = max(free[s], ready)
                end = start + (forward[s] if kind == "F" else backward[s])
                done[(kind, s, m)] = end
                free[s] = end
                out[s].append(Interval(s, kind, m, start, end))
                position[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise AssertionError("the 1F1B schedule deadlocked")
    return out


def _ready(done: dict[tuple[str, int, int], float], kind: str, s: int, m: int, stages: int,
           transfer: list[float]) -> float | None:
    """When the input of (kind, s, m) has arrived, or None if it has not been sent."""
    if kind == "F":
        if s == 0:
            return 0.0
        sent = done.get(("F", s - 1, m))
        return None if sent is None else sent + transfer[s - 1]
    if s == stages - 1:
        return done.get(("F", s, m))
    sent = done.get(("B", s + 1, m))
    return None if sent is None else sent + transfer[s]
