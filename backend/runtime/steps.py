"""Running a model several times on the same inputs, as a training loop does.

`run_steps(runtime, model, inputs, steps)` executes `steps` times; a model with state (a
training step) updates it in place each time. The result holds every output stacked along a
new first axis (a scalar loss becomes shape (steps,)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from nxcc.backend.runtime.handle import ModelHandle
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.status import NrtError, NrtStatus


def run_steps(runtime: Runtime, model: ModelHandle, inputs: Mapping[str, np.ndarray],
              steps: int) -> dict[str, np.ndarray]:
    if steps < 1:
        raise NrtError(NrtStatus.INVALID, f"steps must be >= 1, got {steps}")
    history: dict[str, list[np.ndarray]] = {}
    for _ in range(steps):
        for name, arr in runtime.execute(model, inputs).items():
            history.setdefault(name, []).append(arr)
    return {name: np.stack(arrays) for name, arrays in history.items()}
