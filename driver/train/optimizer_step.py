"""The optimizer update as a compiled program over a flat shard of parameters.

`build_update_module(cfg, n)` builds

    update(param f32[n], slot f32[n]..., grad f32[n], grad_scale f32[], lr f32[], step s32[])
        -> (param', slot'...)

with `passes.autodiff`'s optimizers (AdamW with decoupled weight decay, SGD with momentum;
PyTorch's semantics), the gradient first multiplied by `grad_scale` (1 / tokens of the
global batch, times the clipping factor). The learning rate is an input: the engine computes
it per step with NxD's schedules (`lr_schedule`: linear warm-up and decay, NeMo's cosine
with its warm-up and hold), which the IR schedules do not all express. The update is
elementwise, so one program over a rank's flattened parameters (or its ZeRO-1 shard of them)
is the per-parameter update of each. `step` counts
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


def build_update_module(cfg: OptimizerConfig, n: int) -> Module:
    """The update program over `n` elements (see the module docstring)."""
    vec = TensorType(DType.F32, (n,))
    param = Value(vec, "param")
    slots = [Value(vec, f"param.{s}") for s in cfg.slots]
    grad = Value(vec, "grad")
    scale = Value(TensorType(DType.F32, ()), "grad_scale")
    lr = Value(TensorType(DType.F32, ()), "lr")
    step = Value(TensorType(DType.S32, ()), "step")
    fn = Function("update", [param, *slots, grad, scale, lr, step])
    module = Module("optimizer_step", {"update": fn}, "update")
    b = Builder(module, fn)
    g = b.multiply(grad, b.broadcast_in_dim(scale, shape=(n,), broadcast_dimensions=()))
    t = b.convert(b.add(step, b.splat(1, step.type)), DType.F64)
    new_param, new_slots = apply_optimizer(b, cfg, lr, t, param, g, slots)
    fn.results = [new_param, *new_slots]
    fn.result_names = ["param", *(f"param.{s}" for s in cfg.slots)]
    return module


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
