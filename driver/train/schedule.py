"""The 1F1B pipeline schedule as a pure function: the order of operations on each stage.

`one_f_one_b(stages, micro_batches)` gives, per stage s (0 = first), the list of
`(kind, m)` with kind "F" (forward of micro-batch m) or "B" (its backward), as Megatron's
non-interleaved schedule runs them:

- warm-up: stage s runs `min(stages - s - 1, M)` forwards first;
- steady state: one forward then one backward, until every forward has run;
- cool-down: the backwards left.

So stage s never holds more than `stages - s` micro-batches whose backward has not run (the
last stage runs each backward right after its forward), every micro-batch's forward precedes
its backward on a stage, and micro-batches go through each stage in order. The schedule is
deadlock-free with blocking receives and non-blocking sends: stage s's forward of m waits
only for stage s-1's forward of m, its backward of m only for stage s+1's backward of m.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["F", "B"]
Op = tuple[Kind, int]


def stage_ops(stage: int, stages: int, micro_batches: int) -> list[Op]:
    """The order of forwards and backwards on stage `stage` of `stages`."""
    if not 0 <= stage < stages:
        raise ValueError(f"stage {stage} is not one of 0..{stages - 1}")
    if micro_batches < 1:
        raise ValueError(f"need at least one micro-batch, got {micro_batches}")
    warmup = min(stages - stage - 1, micro_batches)
    ops: list[Op] = [("F", m) for m in range(warmup)]
    next_f, next_b = warmup, 0
    while next_f < micro_batches:
        ops.append(("F", next_f))
        next_f += 1
        ops.append(("B", next_b))
        next_b += 1
    ops += [("B", m) for m in range(next_b, micro_batches)]
    return ops


def one_f_one_b(stages: int, micro_batches: int) -> list[list[Op]]:
    """Every stage's order (see the module docstring)."""
    return [stage_ops(s, stages, micro_batches) for s in range(stages)]


def max_in_flight(ops: list[Op]) -> int:
    """The most micro-batches a stage holds at once (forward run, backward not yet)."""
    held = peak = 0
    for kind, _ in ops:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    return peak
