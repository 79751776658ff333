"""The learning-rate schedules NxD Training configures (`model.optim.sched`), step by step.

`k` counts the optimizer steps already taken (0 for the first), as PyTorch's schedulers
count `last_epoch`.

- `LinearAnnealingWithWarmUp` (NxD's own: Hugging Face's linear schedule): `lr * k / W`
  while k < W, then `lr * max(0, (T - k) / max(1, T - W))`.
- `CosineAnnealing` (NeMo's, a warm-up/anneal/hold policy): `lr * (k + 1) / (W + 1)` while
  k <= W; with `constant_steps` C > 0, `min_lr` once k > W + D where D = T - (C + W);
  `min_lr` past T; otherwise `min_lr + (lr - min_lr) * (1 + cos(pi * (k - W) / S)) / 2`
  with S = T - W (C = 0) or D (C > 0).
- `constant` (no `sched` block, as NeMo without a scheduler): `lr`.

W = `warmup_steps`, T = `max_steps` (default `trainer.max_steps`), `min_lr`, C as NxD's
files name them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nxcc.passes.autodiff.schedules import Schedule


@dataclass(frozen=True)
class SchedConfig:
    name: str
    warmup_steps: int
    max_steps: int
    min_lr: float = 0.0
    constant_steps: int = 0

    def lr_at(self, lr: float, k: int) -> float:
        """The learning rate of step k for peak rate `lr`."""
        if self.name == "LinearAnnealingWithWarmUp":
            return lr * _linear(k, self.warmup_steps, self.max_steps)
        if self.name == "CosineAnnealing":
            return self._cosine(lr, k)
        return lr

    def _cosine(self, lr: float, k: int) -> float:
        w, t, c = self.warmup_steps, self.max_steps, self.constant_steps
        if w > 0 and k <= w:
            return lr * (k + 1) / (w + 1)
        decay = t - (c + w)
        if k > t or (c > 0 and k > w + decay):
            return self.min_lr
        span = decay if c > 0 else t - w
        return self.min_lr + (lr - self.min_lr) * 0.5 * (1.0 + math.cos(math.pi * (k - w) / span))

    def as_schedule(self, lr: float) -> Schedule | None:
        """The same schedule as `passes.autodiff.schedules` computes it inside a compiled
        step, where it has that form (linear and constant ones); None for the cosine."""
        if self.name == "constant":
            return Schedule(lr)
        if self.name == "LinearAnnealingWithWarmUp" and self.max_steps > self.warmup_steps:
            return Schedule(lr, self.warmup_steps, "linear", self.max_steps)
        return None


def _linear(k: int, warmup: int, total: int) -> float:
    if k < warmup:
        return k / max(1, warmup)
    return max(0.0, (total - k) / max(1, total - warmup))
