"""The optimizer update as a compiled program over a flat shard of parameters.

`build_update_module(cfg, schedule, n)` builds

    update(param f32[n], slot f32[n]..., grad f32[n], grad_scale f32[], step s32[])
        -> (param', slot'..., lr f32[])

with `passes.autodiff`'s optimizers (AdamW with decoupled weight decay, SGD with momentum;
PyTorch's semantics) and learning-rate schedule (warm-up, then constant, linear or cosine
decay), the gradient first multiplied by `grad_scale` (1 / tokens of the global batch, times
the clipping factor). The update is elementwise, so one program over a rank's flattened
parameters (or its ZeRO-1 shard of them) is the per-parameter update of each. `step` counts
the steps already taken (0 for the first).

`OptimizerStep` compiles it once through the ordinary pipeline and keeps the slots (state
of the update, updated in place each step).
"""

from __future__ import annotations

import numpy as np

from nxcc.driver.options import CompileOptions
from nxcc.driver.train.stage_program import compile_function
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.optimizers import OptimizerConfig, apply_optimizer
from nxcc.passes.autodiff.schedules import Schedule, learning_rate


def build_update_module(cfg: OptimizerConfig, schedule: Schedule, n: int) -> Module:
    """The update program over `n` elements (see the module docstring)."""
    vec = TensorType(DType.F32, (n,))
    param = Value(vec, "param")
    slots = [Value(vec, f"param.{s}") for s in cfg.slots]
    grad = Value(vec, "grad")
    scale = Value(TensorType(DType.F32, ()), "grad_scale")
    step = Value(TensorType(DType.S32, ()), "step")
    fn = Function("update", [param, *slots, grad, scale, step])
    module = Module("optimizer_step", {"update": fn}, "update")
    b = Builder(module, fn)
    g = b.multiply(grad, b.broadcast_in_dim(scale, shape=(n,), broadcast_dimensions=()))
    lr = learning_rate(b, schedule, step)
    t = b.convert(b.add(step, b.splat(1, step.type)), DType.F64)
    new_param, new_slots = apply_optimizer(b, cfg, lr, t, param, g, slots)
    fn.results = [new_param, *new_slots, lr]
    fn.result_names = ["param", *(f"param.{s}" for s in cfg.slots), "lr"]
    return module


class OptimizerStep:
    """One rank's compiled update over its `n` elements, with the slots it keeps."""

    def __init__(self, cfg: OptimizerConfig, schedule: Schedule, n: int,
                 options: CompileOptions) -> None:
        self.cfg = cfg
        self.n = n
        self.program = compile_function(build_update_module(cfg, schedule, n), "update",
                                        options)
        self.executor = self.program.executor(None)
        self.slots = [np.zeros(n, np.float32) for _ in cfg.slots]

    @property
    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank keeps."""
        return sum(int(s.nbytes) for s in self.slots)

    def __call__(self, param: np.ndarray, grad: np.ndarray, grad_scale: float, step: int
                 ) -> tuple[np.ndarray, float]:
        """(the updated parameters, the learning rate used); the slots are updated."""
        out = self.executor.run([param, *self.slots, grad, np.float32(grad_scale),
                                 np.int32(step)])
        self.slots = out[1:1 + len(self.slots)]
        return out[0], float(out[-1])
