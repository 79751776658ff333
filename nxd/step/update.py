"""The optimizer's update as IR, with the state it keeps (PyTorch's semantics, through
`passes.autodiff.optimizers`).

`step_number(b, step)`: from the step counter (s32, the steps taken so far) the next
counter and the f64 number of this step (1 for the first), which the bias corrections use.
`update_parameters` updates each parameter of a whole step program with its slots;
`build_update_module(cfg, n)` is the update over a flat vector of n parameters

    update(param f32[n], slot f32[n]..., grad f32[n], grad_scale f32[], lr f32[], step s32[])
        -> (param', slot'...)

the gradient first multiplied by `grad_scale`, the learning rate an input (`neuronx-cc
train` computes it with NxD's schedules). The update is elementwise, so one program over a
rank's flattened parameters (or its ZeRO-1 shard of them) is the per-parameter update of
each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.mixed_precision import round_to
from nxcc.passes.autodiff.optimizers import OptimizerConfig, apply_optimizer

ROUNDING_KEY = 0x5EED_0000_0000  # + parameter index: the stochastic-rounding streams


def step_number(b: Builder, step: Value) -> tuple[Value, Value]:
    """(the next step counter, this step's number as f64: counter + 1)."""
    next_step = b.add(step, b.splat(1, step.type))
    return next_step, b.convert(next_step, DType.F64)


@dataclass
class Updated:
    """The parameters' new values, each one's slots (inputs) and their new values."""

    params: list[Value]
    slots_in: list[Value]
    slots_out: list[Value]


def update_parameters(b: Builder, cfg: OptimizerConfig, lr: Value, t: Value, step: Value,
                      stored: Sequence[Value], masters: Sequence[Value],
                      grads: Sequence[Value], stochastic_rounding: bool = False) -> Updated:
    """Each parameter's update at step number `t` (`step_number`) of counter `step`:
    `stored` are the parameters as the program keeps them, `masters` the values it computes
    with (the same, or their f32 converts when kept in bf16: the update is then rounded
    back, stochastically with `stochastic_rounding`, keyed by the parameter's index and the
    step)."""
    counter = b.convert(step, DType.U64)
    out = Updated([], [], [])
    for i, (p, master, g) in enumerate(zip(stored, masters, grads, strict=True)):
        slots = [Value(master.type, f"{p.name}.{s}") for s in cfg.slots]
        new_p, new_slots = apply_optimizer(b, cfg, lr, t, master, g, slots)
        if p is not master:
            key = ROUNDING_KEY + i if stochastic_rounding else None
            new_p = round_to(b, new_p, p.type.dtype, key, counter)
        out.params.append(new_p)
        out.slots_in += slots
        out.slots_out += new_slots
    return out


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
    _, t = step_number(b, step)
    new_param, new_slots = apply_optimizer(b, cfg, lr, t, param, g, slots)
    fn.results = [new_param, *new_slots]
    fn.result_names = ["param", *(f"param.{s}" for s in cfg.slots)]
    return module
