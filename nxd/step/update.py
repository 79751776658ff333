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
each. `split_scalars` takes the step's scalars (bias corrections, step sizes) out of it
into a program of their own, run once per step by a trainer that runs the update chunk by
chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import replace_uses
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


def split_scalars(module: Module) -> tuple[Module | None, Module]:
    """(scalars, update) from the entry of `module`: the ops that compute a rank-0 value
    from its rank-0 parameters and constants only (the bias corrections and step sizes of
    `build_update_module`) moved into a function of their own, `scalars(<the rank-0
    parameters>) -> (hoisted0, hoisted1...)`, whose results the entry then takes as
    parameters after its own (None and the module unchanged when there are none; only
    elementwise ops move, so the new function calls none). A
    program run over many chunks of one step computes them once per step instead of once
    per chunk, by the same ops: the same values."""
    fn = module.functions[module.entry]
    known = {id(p) for p in fn.params if p.type.rank == 0}
    constants: dict[int, Op] = {}
    moved: list[Op] = []
    kept: list[Op] = []
    for op in fn.body:
        if op.opdef is ops.constant and not op.operands and op.results[0].type.rank == 0:
            constants[id(op.results[0])] = op
            kept.append(op)
        elif (op.opdef.elementwise and not op.opdef.side_effects
              and all(r.type.rank == 0 for r in op.results)
              and all(id(v) in known or id(v) in constants for v in op.operands)
              and any(id(v) in known for v in op.operands)):
            known.update(id(r) for r in op.results)
            moved.append(op)
        else:
            kept.append(op)
    produced = {id(r): r for op in moved for r in op.results}
    read = [v for op in kept for v in op.operands] + list(fn.results)
    crossing = list({id(v): v for v in read if id(v) in produced}.values())
    if not crossing:
        return None, module
    scalar_params = [p for p in fn.params if p.type.rank == 0]
    inputs = {id(p): Value(p.type, p.name) for p in scalar_params}
    body: list[Op] = []
    for op in moved:  # each constant it reads copied in first
        for v in op.operands:
            if id(v) in constants and id(v) not in inputs:
                c = constants[id(v)]
                copy = Op(c.opdef, [], [v.type], c.attrs, [v.name])
                inputs[id(v)] = copy.results[0]
                body.append(copy)
        op.operands = [inputs.get(id(v), v) for v in op.operands]
        body.append(op)
    names = [f"hoisted{i}" for i in range(len(crossing))]
    scalars = Function("scalars", [inputs[id(p)] for p in scalar_params], body, crossing,
                       names)
    hoisted = {v: Value(v.type, name) for v, name in zip(crossing, names, strict=True)}
    fn.params = [*fn.params, *hoisted.values()]
    fn.body = kept
    replace_uses(fn, hoisted)
    return Module(f"{module.name}.scalars", {"scalars": scalars}, "scalars"), module
