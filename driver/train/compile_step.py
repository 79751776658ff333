"""Compiling a training step: model -> forward + loss + backward + optimizer update -> NEFF.

`compile_training(path, options, training)` imports the ONNX model with its floating-point
initializers as parameters (`import_with_parameters`), rewrites its entry into the training
step (`nxd.step.program.build_training_step`: the loss, the gradients of the trainable
parameters, clipping, the optimizer with its schedule, its state) and compiles it with the
state aliased (`backend.program.state`): a loaded step updates its parameters, slots and
step counter in place, and users pass only the batch and labels.
"""

from __future__ import annotations

import os
from collections.abc import Callable

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
from nxcc.errors import BAD_ARGUMENT, UNSUPPORTED_OPERATOR
from nxcc.ir.core import Module
from nxcc.ir.printer import print_module
from nxcc.nxd.step import StepError
from nxcc.nxd.step.program import StateSlot, StepOptions
from nxcc.nxd.step.program import build_training_step as build_step
from nxcc.passes.manager import PRINT_ELIDE_OVER


def compile_training(path: str, options: CompileOptions, training: StepOptions,
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


def _state(slots: list[StateSlot]) -> list[StateBuffer]:
    return [StateBuffer(s.name, s.input, s.output, s.initial) for s in slots]


def build_training_step(module: Module, initial: dict[str, np.ndarray],
                        training: StepOptions) -> list[StateBuffer]:
    """Rewrite `module`'s entry into the training step (`nxd.step.program`); the state it
    keeps. CompileError: NCC_EUOC002 for an op without a gradient rule, else NCC_EARG001."""
    try:
        return _state(build_step(module, initial, training))
    except StepError as exc:
        raise CompileError(UNSUPPORTED_OPERATOR if exc.unsupported else BAD_ARGUMENT,
                           str(exc)) from None
