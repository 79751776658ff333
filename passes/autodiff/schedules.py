"""Learning-rate schedules as IR builders, computed from the step counter kept as state.

`learning_rate(b, schedule, step)` returns the f32 scalar learning rate for the step about
to run, where `step` (s32 scalar) counts the steps already taken (k = 0 for the first).
Following the usual warm-up schedules (as Hugging Face's get_*_schedule_with_warmup on
PyTorch's LambdaLR): lr * k / warmup while k < warmup, then lr times
- constant: 1,
- linear: max(0, (max_steps - k) / (max_steps - warmup)),
- cosine: 0.5 * (1 + cos(pi * p)), p = min(1, (k - warmup) / (max_steps - warmup))
  (0 from max_steps on).
The arithmetic runs in f64 (as PyTorch's Python floats) and is rounded to f32 once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

DECAYS = ("constant", "linear", "cosine")
F64 = TensorType(DType.F64, ())


@dataclass(frozen=True)
class Schedule:
    """The peak learning rate, warm-up steps, decay kind and the step it ends at."""

    lr: float
    warmup_steps: int = 0
    decay: str = "constant"
    max_steps: int = 0

    def __post_init__(self) -> None:
        if self.decay not in DECAYS:
            raise ValueError(f"decay {self.decay!r} is not one of {', '.join(DECAYS)}")
        if self.warmup_steps < 0:
            raise ValueError(f"warm-up steps must be >= 0, got {self.warmup_steps}")
        if self.decay != "constant" and self.max_steps <= self.warmup_steps:
            raise ValueError(f"{self.decay} decay needs max steps ({self.max_steps}) above "
                             f"the warm-up steps ({self.warmup_steps})")

    def factor(self, k: int) -> float:
        """The multiplier of `lr` at step k, in Python (the reference the IR follows)."""
        if k < self.warmup_steps:
            return k / self.warmup_steps
        if self.decay == "constant":
            return 1.0
        span = self.max_steps - self.warmup_steps
        if self.decay == "linear":
            return max(0.0, (self.max_steps - k) / span)
        progress = min(1.0, (k - self.warmup_steps) / span)
        return 0.5 * (1.0 + math.cos(math.pi * progress))


def _c(b: Builder, value: float) -> Value:
    return b.splat(value, F64)


def learning_rate(b: Builder, schedule: Schedule, step: Value) -> Value:
    k = b.convert(step, DType.F64)
    factor = _c(b, 1.0)
    if schedule.decay != "constant":
        span = float(schedule.max_steps - schedule.warmup_steps)
        progress = b.divide(b.subtract(k, _c(b, float(schedule.warmup_steps))), _c(b, span))
        if schedule.decay == "linear":
            factor = b.subtract(_c(b, 1.0), progress)
        else:
            angle = b.multiply(b.minimum(progress, _c(b, 1.0)), _c(b, math.pi))
            factor = b.multiply(_c(b, 0.5), b.add(_c(b, 1.0), b.cos(angle)))
        factor = b.maximum(factor, _c(b, 0.0))
    if schedule.warmup_steps > 0:
        ramp = b.divide(k, _c(b, float(schedule.warmup_steps)))
        warming = b.compare(k, _c(b, float(schedule.warmup_steps)), direction="LT")
        factor = b.select(warming, ramp, factor)
    return b.convert(b.multiply(_c(b, schedule.lr), factor), DType.F32)
