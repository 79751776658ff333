"""Running a model several times on the same inputs, as a training loop does.

`run_steps(runtime, model, inputs, steps)` executes `steps` times. A model with state (a
training step) updates it in place each time; an output aliased to an input the caller
holds (HLO's donated arguments) becomes that input of the next step, as it is (no copy).
The result holds the aliased outputs of the last step and every other output stacked along
a new first axis (a scalar loss becomes shape (steps,)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from nxcc.backend.runtime.handle import ModelHandle
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.state import visible_aliases
from nxcc.backend.runtime.status import NrtError, NrtStatus


def run_steps(runtime: Runtime, model: ModelHandle, inputs: Mapping[str, np.ndarray],
              steps: int) -> dict[str, np.ndarray]:
    if steps < 1:
        raise NrtError(NrtStatus.INVALID, f"steps must be >= 1, got {steps}")
    aliases = visible_aliases(model.manifest)
    aliased = {out for _, out in aliases}
    current = dict(inputs)
    history: dict[str, list[np.ndarray]] = {}
    last: dict[str, np.ndarray] = {}
    for _ in range(steps):
        outputs = runtime.execute(model, current)
        for name, arr in outputs.items():
            if name in aliased:
                last[name] = arr
            else:
                history.setdefault(name, []).append(arr)
        for in_name, out_name in aliases:
            current[in_name] = outputs[out_name]
    stacked = {name: np.stack(arrays) for name, arrays in history.items()}
    return {name: last[name] if name in last else stacked[name] for name in outputs}
