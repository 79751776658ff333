"""Compiling a training step: model -> forward + loss + backward + optimizer update -> NEFF.

`compile_training(path, options, training)` imports the ONNX model with its floating-point
initializers as parameters, appends the loss on output `training.loss_input` against a new
input `training.label_input`, differentiates it (`passes.autodiff`) for the trainable
parameters, clips the gradients and applies the optimizer with its learning-rate schedule.
The step's program:

    inputs:  trainable parameters, optimizer slots (NAME.adam_m, NAME.adam_v or
             NAME.momentum), optimizer.step, then the model's inputs and the labels
    outputs: loss [, grad_norm], then the new parameters, slots and step

Parameters, slots and the step counter are state (`backend.program.state`): each output
aliases its input, so a loaded step updates them in place and users pass only the batch and
labels. Floating-point initializers that are not trained go back to being constants. Random
ops (training-mode Dropout...) draw at the step counter, so each step gets new numbers.
With `mixed_precision="bf16"` the products run in bf16 on f32 master weights
(`passes.autodiff.mixed_precision`); with `bf16_weights` the parameters themselves are kept
in bf16 (the update computed in f32, rounded to nearest or stochastically).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from nxcc.backend.program.state import StateBuffer
from nxcc.compiler.onnx import FrontendError, import_onnx
from nxcc.compiler.onnx.errors import DYNAMIC
from nxcc.compiler.onnx.loader import load_model, value_sources
from nxcc.driver.compile import CompileResult, check_print_ir_after, compile_module
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions, framework_for
from nxcc.driver.training_options import TrainingOptions
from nxcc.errors import BAD_ARGUMENT, UNSUPPORTED_OPERATOR
from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.printer import print_module
from nxcc.ir.rewrite import replace_uses
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.differentiate import GradientError, differentiable_params, differentiate
from nxcc.passes.autodiff.losses import LOSSES, LossError, label_type
from nxcc.passes.autodiff.mixed_precision import autocast, keep_in, round_to
from nxcc.passes.autodiff.optimizers import apply_optimizer, clip_by_global_norm
from nxcc.passes.autodiff.schedules import learning_rate
from nxcc.passes.manager import PRINT_ELIDE_OVER

STEP_NAME = "optimizer.step"
ROUNDING_KEY = 0x5EED_0000_0000  # + parameter index: the stochastic-rounding streams


def compile_training(path: str, options: CompileOptions, training: TrainingOptions,
                     emit: Callable[[str], None] = print) -> CompileResult:
    """Compile the training step of the model at `path` to the NEFF `options.output`."""
    check_print_ir_after(options)
    if framework_for(path, options.framework) != "ONNX":
        raise CompileError(BAD_ARGUMENT, "--training compiles ONNX models (give an .onnx "
                           "file or --framework ONNX)")
    if not os.path.exists(path):
        raise CompileError(BAD_ARGUMENT, f"model file {path!r} does not exist")
    try:
        proto, _ = load_model(path)
        module, initial = import_with_parameters(proto, options)
    except FrontendError as exc:
        raise CompileError(exc.code, str(exc)) from None
    state = build_training_step(module, initial, training)
    if {"all", "differentiate"} & options.print_ir_after:
        emit("// -----// IR after differentiate //----- //\n"
             + print_module(module, PRINT_ELIDE_OVER))
    name = os.path.splitext(os.path.basename(path))[0]
    return compile_module(module, name, "ONNX", options, emit, state=tuple(state))


def float_initializers(proto: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The model's dense floating-point initializers by name."""
    out = {}
    for init in proto.graph.initializer:
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
                              onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            out[init.name] = numpy_helper.to_array(init)
    return out


def _as_inputs(proto: onnx.ModelProto, names: set[str]) -> onnx.ModelProto:
    """A copy of `proto` whose initializers `names` are graph inputs instead (first)."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    graph = model.graph
    declared = {i.name for i in graph.input}
    inits = [t for t in graph.initializer if t.name in names]
    kept = [t for t in graph.initializer if t.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    new_inputs = [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                  for t in inits if t.name not in declared]
    old = list(graph.input)
    del graph.input[:]
    graph.input.extend(new_inputs + old)
    return model


def import_with_parameters(proto: onnx.ModelProto, options: CompileOptions
                           ) -> tuple[Module, dict[str, np.ndarray]]:
    """The model imported with its floating-point initializers as parameters (those the
    frontend needs known at compile time, such as a Resize's scales, stay constants), and
    the initial value of each."""
    initial = float_initializers(proto)
    names = set(initial)
    while True:
        try:
            return import_onnx(_as_inputs(proto, names), options.input_shapes), \
                {n: initial[n] for n in names}
        except FrontendError as exc:
            if exc.code != DYNAMIC or exc.value is None:
                raise
            needed = set(value_sources(proto.graph.node, exc.value, names))
            if not needed:
                raise
            names -= needed


def _fail(message: str, code: str = BAD_ARGUMENT) -> CompileError:
    return CompileError(code, message)


def _loss_output(fn: Function, training: TrainingOptions) -> Value:
    names = fn.result_names or [f"output{i}" for i in range(len(fn.results))]
    if training.loss_input not in names:
        raise _fail(f"--loss-input {training.loss_input!r} is not an output of the model "
                    f"(outputs: {', '.join(names)})")
    return fn.results[names.index(training.loss_input)]


def _trainable(fn: Function, loss: Value, candidates: list[Value],
               training: TrainingOptions) -> list[Value]:
    """The parameters to train: as `--trainable` names them, else every candidate the
    loss depends on differentiably; CompileError when there is none."""
    found = differentiable_params(fn, loss, candidates)
    if not training.trainable:
        if not found:
            raise _fail("no trainable parameter: the loss depends differentiably on no "
                        "floating-point initializer of the model")
        return found
    by_name = {v.name: v for v in candidates}
    for n in training.trainable:
        if n not in by_name:
            raise _fail(f"--trainable {n!r} is not a floating-point initializer of the model")
        if by_name[n] not in found:
            raise _fail(f"--trainable {n!r}: the loss does not depend on it differentiably")
    return [by_name[n] for n in training.trainable]


def freeze_params(fn: Function, params: Sequence[Value],
                  initial: dict[str, np.ndarray]) -> None:
    """Turn `params` back into constants holding their initial values."""
    mapping: dict[Value, Value] = {}
    consts = []
    for p in params:
        op = Op(ops.constant, [], [p.type], {"value": Dense.of(initial[p.name or ""],
                                                              p.type.dtype)})
        op.result.name = p.name
        consts.append(op)
        mapping[p] = op.result
    fn.body[:0] = consts
    replace_uses(fn, mapping)
    fn.params = [p for p in fn.params if p not in mapping]


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


def build_training_step(module: Module, initial: dict[str, np.ndarray],
                        training: TrainingOptions) -> list[StateBuffer]:
    """Rewrite `module`'s entry into the training step; the state it keeps."""
    fn = module.entry_function
    b = Builder(module, fn)
    output = _loss_output(fn, training)
    user_inputs = [p for p in fn.params if p.name not in initial]
    if any(p.name == training.label_input for p in fn.params):
        raise _fail(f"--label-input {training.label_input!r} is already an input of the model")
    try:
        labels = Value(label_type(training.loss, output.type), training.label_input)
        loss = LOSSES[training.loss](b, output, labels)
    except LossError as exc:
        raise _fail(f"--loss {training.loss} on output {training.loss_input!r}: {exc}") \
            from None
    candidates = [p for p in fn.params if p.name in initial]
    trainable = _trainable(fn, loss, candidates, training)
    freeze_params(fn, [p for p in candidates if p not in trainable], initial)
    if training.mixed_precision == "bf16":
        autocast(module, fn, DType.BF16)
    stored = keep_in(fn, trainable, DType.BF16) if training.bf16_weights else list(trainable)
    try:
        grads = differentiate(module, fn, [_f32_of(fn, s, p) for s, p in
                                           zip(stored, trainable, strict=True)], loss)
    except GradientError as exc:
        raise _fail(f"cannot differentiate the loss: {exc}", UNSUPPORTED_OPERATOR) from None
    grads, norm = clip_by_global_norm(b, grads, training.clip_grad_norm)
    cfg = training.optimizer
    step = Value(TensorType(DType.S32, ()), STEP_NAME)
    _key_random_by_step(fn, step)
    lr = learning_rate(b, training.schedule, step)
    next_step = b.add(step, b.splat(1, step.type))
    t = b.convert(next_step, DType.F64)
    state_in: list[Value] = []
    state_out: list[Value] = []
    slot_in: list[Value] = []
    slot_out: list[Value] = []
    counter = b.convert(step, DType.U64)
    for i, (p, g) in enumerate(zip(stored, grads, strict=True)):
        master = _f32_of(fn, p, trainable[i])
        slots = [Value(master.type, f"{p.name}.{s}") for s in cfg.slots]
        new_p, new_slots = apply_optimizer(b, cfg, lr, t, master, g, slots)
        if p is not master:
            key = ROUNDING_KEY + i if training.stochastic_rounding else None
            new_p = round_to(b, new_p, p.type.dtype, key, counter)
        state_in.append(p)
        state_out.append(new_p)
        slot_in += slots
        slot_out += new_slots
    state_in += [*slot_in, step]
    state_out += [*slot_out, next_step]
    fn.params = [*state_in, *user_inputs, labels]
    head = [loss, norm] if training.output_grad_norm else [loss]
    fn.results = [*head, *state_out]
    fn.result_names = [*(["loss", "grad_norm"][:len(head)]), *(v.name or "" for v in state_in)]
    return [StateBuffer(v.name or "", i, len(head) + i,
                        initial.get(v.name or "") if v in stored else None)
            for i, v in enumerate(state_in)]


def _f32_of(fn: Function, stored: Value, original: Value) -> Value:
    """The value the program computes with for a trainable parameter: the parameter itself,
    or (weights kept in bf16) the f32 convert of it that `keep_in` made."""
    if stored is original:
        return original
    return next(op.result for op in fn.body
                if op.opdef is ops.convert and op.operands[0] is stored)
