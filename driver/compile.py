"""The compiler driver: model file -> frontend -> pass pipeline -> NEFF.

`compile_model(path, options)` either writes `options.output` (atomically) and returns what
it did, or raises `CompileError` with a one-line message and leaves no file behind.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nxcc.backend.neff import NeffError, NeffHeader
from nxcc.backend.program.package import NeffSpec, write_program_neff
from nxcc.backend.program.state import StateBuffer
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions, framework_for
from nxcc.driver.sharding_stage import core_programs
from nxcc.ir.core import Module
from nxcc.passes.manager import PassFailure, PassManager
from nxcc.passes.registry import PASSES, pipeline

if TYPE_CHECKING:
    import onnx

log = logging.getLogger("nxcc.compiler")


@dataclass(frozen=True)
class CompileResult:
    """The written NEFF's path and header, and each pass's (name, seconds, changed)."""

    output: str
    header: NeffHeader
    timings: list[tuple[str, float, bool]]
    module: Module


def import_model(path: str, options: CompileOptions) -> Module:
    """The IR module of the model at `path`, through the frontend of its framework."""
    framework = framework_for(path, options.framework)
    if not os.path.exists(path):
        raise CompileError("NCC_EARG001", f"model file {path!r} does not exist")
    if framework == "ONNX":
        from nxcc.compiler.onnx import FrontendError, import_onnx

        try:
            return import_onnx(path, options.input_shapes)
        except FrontendError as exc:
            raise CompileError(exc.code, str(exc.args[0] if exc.args else exc)) from None
    if framework == "XLA":
        from nxcc.compiler.hlo import HloError, import_hlo

        try:
            return import_hlo(path)
        except HloError as exc:
            raise CompileError(exc.code, str(exc)) from None
    raise CompileError("NCC_EARG001", f"--framework {framework} is not supported yet")


def compile_model(path: str, options: CompileOptions,
                  emit: Callable[[str], None] = print) -> CompileResult:
    """Compile the model at `path` to the NEFF `options.output`."""
    check_print_ir_after(options)
    module = import_model(path, options)
    name = os.path.splitext(os.path.basename(path))[0]
    return compile_module(module, name, framework_for(path, options.framework), options, emit)


def compile_onnx_model(proto: onnx.ModelProto, options: CompileOptions, name: str = "model",
                       emit: Callable[[str], None] = print) -> CompileResult:
    """Compile an in-memory ONNX model to the NEFF `options.output` (as `compile_model`)."""
    from nxcc.compiler.onnx import FrontendError, import_onnx

    check_print_ir_after(options)
    try:
        module = import_onnx(proto, options.input_shapes)
    except FrontendError as exc:
        raise CompileError(exc.code, str(exc), exc.value) from None
    return compile_module(module, name, "ONNX", options, emit)


def check_print_ir_after(options: CompileOptions) -> None:
    """CompileError unless every `--print-ir-after` name is a pass (or `all`)."""
    unknown = set(options.print_ir_after) - set(PASSES) - {"all"}
    if unknown:
        raise CompileError("NCC_EARG001", f"--print-ir-after {', '.join(sorted(unknown))}: no "
                           f"such pass (passes: {', '.join(sorted(PASSES))}, or all)")


def alias_buffers(module: Module) -> tuple[StateBuffer, ...]:
    """The module's input_output_alias as visible aliases; CompileError if one pairs a
    parameter and a result that do not exist or differ in type."""
    fn = module.entry_function
    out = []
    for result, param in module.input_output_alias:
        if not (0 <= param < len(fn.params) and 0 <= result < len(fn.results)):
            raise CompileError("NCC_EFRM002", f"input_output_alias pairs output {result} "
                               f"with parameter {param}, which do not both exist")
        if fn.params[param].type != fn.results[result].type:
            raise CompileError("NCC_EFRM002", f"input_output_alias pairs output {result} "
                               f"({fn.results[result].type}) with parameter {param} "
                               f"({fn.params[param].type})")
        out.append(StateBuffer(fn.params[param].name or f"input{param}", param, result,
                               kept=False))
    return tuple(out)


def compile_module(module: Module, name: str, framework: str, options: CompileOptions,
                   emit: Callable[[str], None] = print,
                   state: tuple[StateBuffer, ...] = ()) -> CompileResult:
    """Run the -O pipeline on `module` and write it as the NEFF `options.output`; `state`
    pairs the outputs that feed inputs of the next execution (a training step); otherwise
    the module's own `input_output_alias` (HLO's donated arguments) is declared."""
    if not state and module.input_output_alias:
        state = alias_buffers(module)
    manager = PassManager(pipeline(options.optlevel), print_after=options.print_ir_after,
                          emit=emit)
    try:
        manager.run(module)
        cores, shard_timings = core_programs(module, options.logical_nc_config,
                                             options.print_ir_after, emit)
    except PassFailure as exc:
        raise CompileError("NCC_EVRF064", str(exc).splitlines()[0]) from exc
    timings = manager.timings + shard_timings
    spec = NeffSpec(
        target=options.target,
        lnc=options.logical_nc_config,
        name=name,
        compress=not options.fast_loading,
        compiler={"optlevel": options.optlevel,
                  "passes": [t[0] for t in timings],
                  "framework": framework},
        state=state,
    )
    try:
        header = write_program_neff(options.output, cores, spec)
    except (NeffError, OSError) as exc:
        raise CompileError("NCC_EARG001", f"cannot write {options.output!r}: {exc}") from None
    return CompileResult(options.output, header, timings, module)
