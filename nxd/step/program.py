"""`build_training_step`: an imported model's entry rewritten into one whole training step.

The step computes the loss `options.loss` on output `options.loss_input` against a new input
`options.label_input`, differentiates it for the trainable parameters (`loss.py`), clips the
gradients (`clip_by_global_norm`), and applies the optimizer with its learning-rate schedule
(`update.py`). Its function:

    inputs:  trainable parameters, optimizer slots (NAME.adam_m, NAME.adam_v or
             NAME.momentum), optimizer.step, then the model's inputs and the labels
    outputs: loss [, grad_norm], then the new parameters, slots and step

Parameters, slots and the step counter are state (`StateSlot`: each output aliases its
input, so a loaded step updates them in place). Floating-point initializers that are not
trained go back to being constants. Random ops (training-mode Dropout...) draw at the step
counter, so each step gets new numbers. With `mixed_precision="bf16"` the products run in
bf16 on f32 master weights (`passes.autodiff.mixed_precision`); with `bf16_weights` the
parameters themselves are kept in bf16 (the update computed in f32, rounded to nearest or
stochastically).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.nxd.step.loss import add_loss, freeze_params, gradients, output_named, trainable_params
from nxcc.nxd.step.update import step_number, update_parameters
from nxcc.passes.autodiff.mixed_precision import autocast, keep_in
from nxcc.passes.autodiff.optimizers import OptimizerConfig, clip_by_global_norm
from nxcc.passes.autodiff.schedules import Schedule, learning_rate

STEP_NAME = "optimizer.step"


@dataclass(frozen=True)
class StepOptions:
    """What the step computes: the loss on output `loss_input` against the new input
    `label_input`, the gradients of `trainable` (empty: every floating-point initializer
    the loss depends on differentiably), clipping, the optimizer and its schedule."""

    loss: str
    loss_input: str
    label_input: str
    optimizer: OptimizerConfig
    schedule: Schedule
    clip_grad_norm: float | None = None
    trainable: tuple[str, ...] = ()
    output_grad_norm: bool = False
    mixed_precision: str | None = None
    bf16_weights: bool = False
    stochastic_rounding: bool = False


@dataclass(frozen=True)
class StateSlot:
    """Input `input` of the step is fed from its output `output` of the previous run;
    `initial` its value before the first (None: zeros)."""

    name: str
    input: int
    output: int
    initial: np.ndarray | None = None


def _key_random_by_step(fn: Function, step: Value) -> None:
    """Make every random_bits op of the entry draw at the step counter (so dropout masks
    change from step to step, reproducibly for a seed); ops of called functions keep
    their counters."""
    users = [op for op in fn.body if op.opdef is ops.random_bits]
    if not users:
        return
    counter = Op(ops.convert, [step], [TensorType(DType.U64, ())], {"dtype": DType.U64})
    fn.body.insert(0, counter)
    for op in users:
        op.operands[1] = counter.result


def _f32_of(fn: Function, stored: Value, original: Value) -> Value:
    """The value the program computes with for a trainable parameter: the parameter itself,
    or (weights kept in bf16) the f32 convert of it that `keep_in` made."""
    if stored is original:
        return original
    return next(op.result for op in fn.body
                if op.opdef is ops.convert and op.operands[0] is stored)


def build_training_step(module: Module, initial: dict[str, np.ndarray],
                        options: StepOptions) -> list[StateSlot]:
    """Rewrite `module`'s entry into the training step; the state it keeps (StepError
    naming the option, output, parameter or op that does not fit)."""
    fn = module.entry_function
    b = Builder(module, fn)
    output = output_named(fn, options.loss_input, "--loss-input")
    user_inputs = [p for p in fn.params if p.name not in initial]
    loss, labels = add_loss(b, output, options.loss, options.label_input, options.loss_input)
    candidates = [p for p in fn.params if p.name in initial]
    trainable = trainable_params(fn, loss, candidates, options.trainable)
    freeze_params(fn, [p for p in candidates if p not in trainable], initial)
    if options.mixed_precision == "bf16":
        autocast(module, fn, DType.BF16)
    stored = keep_in(fn, trainable, DType.BF16) if options.bf16_weights else list(trainable)
    masters = [_f32_of(fn, s, p) for s, p in zip(stored, trainable, strict=True)]
    grads = gradients(module, fn, masters, loss)
    grads, norm = clip_by_global_norm(b, grads, options.clip_grad_norm)
    step = Value(TensorType(DType.S32, ()), STEP_NAME)
    _key_random_by_step(fn, step)
    lr = learning_rate(b, options.schedule, step)
    next_step, t = step_number(b, step)
    new = update_parameters(b, options.optimizer, lr, t, step, stored, masters, grads,
                            options.stochastic_rounding)
    state_in = [*stored, *new.slots_in, step]
    state_out = [*new.params, *new.slots_out, next_step]
    fn.params = [*state_in, *user_inputs, labels]
    head = [loss, norm] if options.output_grad_norm else [loss]
    fn.results = [*head, *state_out]
    fn.result_names = [*(["loss", "grad_norm"][:len(head)]), *(v.name or "" for v in state_in)]
    return [StateSlot(v.name or "", i, len(head) + i,
                      initial.get(v.name or "") if v in stored else None)
            for i, v in enumerate(state_in)]
