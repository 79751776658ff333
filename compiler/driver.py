"""The compiler driver: model file -> frontend -> pass pipeline -> NEFF.

`compile_model(path, options)` either writes `options.output` (atomically) and returns what
it did, or raises `CompileError` with a one-line message and leaves no file behind.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from backend.neff import NeffError, NeffHeader
from backend.program.package import NeffSpec, write_program_neff
from compiler.errors import CompileError
from compiler.options import CompileOptions, framework_for
from ir.core import Module
from passes.manager import PassFailure, PassManager
from passes.registry import PASSES, pipeline

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
        from compiler.onnx import FrontendError, import_onnx

        try:
            return import_onnx(path, options.input_shapes)
        except FrontendError as exc:
            raise CompileError(exc.code, str(exc.args[0] if exc.args else exc)) from None
    if framework == "XLA":
        from compiler.hlo import HloError, import_hlo

        try:
            return import_hlo(path)
        except HloError as exc:
            raise CompileError(exc.code, str(exc)) from None
    raise CompileError("NCC_EARG001", f"--framework {framework} is not supported yet")


def compile_model(path: str, options: CompileOptions,
                  emit: Callable[[str], None] = print) -> CompileResult:
    """Compile the model at `path` to the NEFF `options.output`."""
    unknown = set(options.print_ir_after) - set(PASSES) - {"all"}
    if unknown:
        raise CompileError("NCC_EARG001", f"--print-ir-after {', '.join(sorted(unknown))}: no "
                           f"such pass (passes: {', '.join(sorted(PASSES))}, or all)")
    module = import_model(path, options)
    manager = PassManager(pipeline(options.optlevel), print_after=options.print_ir_after,
                          emit=emit)
    try:
        manager.run(module)
    except PassFailure as exc:
        raise CompileError("NCC_EVRF064", str(exc).splitlines()[0]) from exc
    name = os.path.splitext(os.path.basename(path))[0]
    spec = NeffSpec(
        target=options.target,
        lnc=options.logical_nc_config,
        name=name,
        compress=not options.fast_loading,
        compiler={"optlevel": options.optlevel,
                  "passes": [t[0] for t in manager.timings],
                  "framework": framework_for(path, options.framework)},
    )
    try:
        header = write_program_neff(options.output, [module], spec)
    except (NeffError, OSError) as exc:
        raise CompileError("NCC_EARG001", f"cannot write {options.output!r}: {exc}") from None
    return CompileResult(options.output, header, manager.timings, module)
