"""The optimizer update as a compiled program over a flat shard of parameters.

The program is `nxd.step.update.build_update_module`'s (the gradient scaled by 1 / tokens
of the global batch times the clipping factor, the learning rate an input computed per step
with NxD's schedules, `lr_schedule`). `OptimizerStep` compiles it once through the ordinary
pipeline and keeps the slots (state of the update, updated in place each step).
"""

from __future__ import annotations

import numpy as np

from nxcc.driver.options import CompileOptions
from nxcc.driver.train.stage_program import compile_function
from nxcc.nxd.step.update import build_update_module
from nxcc.passes.autodiff.optimizers import OptimizerConfig


class OptimizerStep:
    """One rank's compiled update over its `n` elements, with the slots it keeps."""

    def __init__(self, cfg: OptimizerConfig, n: int, options: CompileOptions,
                 state_dtype: np.dtype | None = None) -> None:
        """`state_dtype`: how the slots are kept between steps (f32 by default; the update
        itself runs in f32 and a bf16 state is rounded to nearest after it)."""
        self.cfg = cfg
        self.n = n
        self.program = compile_function(build_update_module(cfg, n), "update", options)
        self.executor = self.program.executor(None)
        self.state_dtype = np.dtype(np.float32 if state_dtype is None else state_dtype)
        self.slots = [np.zeros(n, self.state_dtype) for _ in cfg.slots]

    @property
    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank keeps."""
        return sum(int(s.nbytes) for s in self.slots)

    def __call__(self, param: np.ndarray, grad: np.ndarray, grad_scale: float, lr: float,
                 step: int) -> np.ndarray:
        """The updated parameters after step `step` (0 for the first); the slots are
        updated."""
        slots = [s.astype(np.float32, copy=False) for s in self.slots]
        out = self.executor.run([param, *slots, grad, np.array(grad_scale, np.float32),
                                 np.array(lr, np.float32), np.array(step, np.int32)])
        self.slots = [s.astype(self.state_dtype, copy=False) for s in out[1:]]
        return out[0]
