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
from nxcc.backend.neff.constants import NXCC_VERSION
from nxcc.backend.program.package import NeffSpec, write_program_neff
from nxcc.backend.program.state import StateBuffer
from nxcc.backend.runtime.loadable import UnloadableNeff
from nxcc.driver.compile_gc import compile_gc
from nxcc.driver.errors import CompileError, write_error
from nxcc.driver.frontends import choose_framework, import_xla
from nxcc.driver.hbm_check import check_peak_hbm
from nxcc.driver.options import CompileOptions
from nxcc.driver.save_temps import SavedTemps, make_workdir
from nxcc.driver.sharding_stage import core_programs, mesh_passes
from nxcc.errors import BAD_ARGUMENT, INVALID_MODEL, RUNTIME_LIMIT, VERIFICATION_FAILED
from nxcc.ir.core import Module
from nxcc.passes.base import Pass
from nxcc.passes.manager import PassFailure, PassManager
from nxcc.passes.registry import PASSES, core_pipeline, pipeline, precision_passes

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


def import_model(path: str, options: CompileOptions,
                 progress: Callable[[str], None] | None = None) -> tuple[Module, str]:
    """(the IR module of the model at `path`, its framework): the frontend is chosen by the
    file's content, checked against `--framework` (`driver.frontends`)."""
    if not os.path.exists(path):
        raise CompileError(BAD_ARGUMENT, f"model file {path!r} does not exist")
    framework, found = choose_framework(path, options.framework)
    if progress is not None:
        progress("import")
    if framework == "ONNX":
        # the ONNX frontend (onnx and its protobuf classes) only for an ONNX model
        from nxcc.compiler.onnx import FrontendError, import_onnx

        try:
            return import_onnx(path, options.input_shapes), framework
        except FrontendError as exc:
            raise CompileError(exc.code, str(exc), exc.value) from None
    return import_xla(path, found), framework


def compile_model(path: str, options: CompileOptions,
                  emit: Callable[[str], None] = print,
                  progress: Callable[[str], None] | None = None) -> CompileResult:
    """Compile the model at `path` to the NEFF `options.output`; `progress(stage)` is told
    each stage (import, each pass, shard, write) as it starts."""
    check_print_ir_after(options)
    with compile_gc():
        module, framework = import_model(path, options, progress)
        name = os.path.splitext(os.path.basename(path))[0]
        return compile_module(module, name, framework, options, emit, progress)


def compile_onnx_model(proto: onnx.ModelProto, options: CompileOptions, name: str = "model",
                       emit: Callable[[str], None] = print) -> CompileResult:
    """Compile an in-memory ONNX model to the NEFF `options.output` (as `compile_model`)."""
    from nxcc.compiler.onnx import FrontendError, import_onnx  # as in compile_model

    check_print_ir_after(options)
    with compile_gc():
        try:
            module = import_onnx(proto, options.input_shapes)
        except FrontendError as exc:
            raise CompileError(exc.code, str(exc), exc.value) from None
        return compile_module(module, name, "ONNX", options, emit)


def check_print_ir_after(options: CompileOptions) -> None:
    """CompileError unless every `--print-ir-after` name is a pass (or `all`)."""
    unknown = set(options.print_ir_after) - set(PASSES) - {"all"}
    if unknown:
        raise CompileError(BAD_ARGUMENT, f"--print-ir-after {', '.join(sorted(unknown))}: no "
                           f"such pass (passes: {', '.join(sorted(PASSES))}, or all)")


def _warn_passes_not_run(asked: frozenset[str], ran: list[str]) -> None:
    """One warning naming the `--print-ir-after` passes this compile did not run (a
    sharding pass at -lnc 1, a precision pass without its flag), which printed nothing."""
    missing = sorted(asked - set(ran) - {"all"})
    if missing:
        log.warning("--print-ir-after %s: not run for these options, nothing printed",
                    ", ".join(missing))


def full_pipeline(options: CompileOptions) -> list[Pass]:
    """The passes run for `options`: auto-cast and saturation when asked, then the -O
    pipeline."""
    return precision_passes(options.auto_cast, options.auto_cast_type,
                            options.mixed_precision_accumulation,
                            options.saturate_infinity) + pipeline(options.optlevel)


def alias_buffers(module: Module) -> tuple[StateBuffer, ...]:
    """The module's input_output_alias as visible aliases; CompileError if one pairs a
    parameter and a result that do not exist or differ in type."""
    fn = module.entry_function
    out = []
    for result, param in module.input_output_alias:
        if not (0 <= param < len(fn.params) and 0 <= result < len(fn.results)):
            raise CompileError(INVALID_MODEL, f"input_output_alias pairs output {result} "
                               f"with parameter {param}, which do not both exist")
        if fn.params[param].type != fn.results[result].type:
            raise CompileError(INVALID_MODEL, f"input_output_alias pairs output {result} "
                               f"({fn.results[result].type}) with parameter {param} "
                               f"({fn.params[param].type})")
        out.append(StateBuffer(fn.params[param].name or f"input{param}", param, result,
                               kept=False))
    return tuple(out)


def compile_module(module: Module, name: str, framework: str, options: CompileOptions,
                   emit: Callable[[str], None] = print,
                   progress: Callable[[str], None] | None = None,
                   state: tuple[StateBuffer, ...] = ()) -> CompileResult:
    """Run the pipeline on `module` and write it as the NEFF `options.output`; `state` pairs
    the outputs that feed inputs of the next execution (a training step); otherwise the
    module's own `input_output_alias` (HLO's donated arguments) is declared."""
    if not state and module.input_output_alias:
        state = alias_buffers(module)
    temps = SavedTemps(make_workdir(options.workdir)) if options.save_temps else None
    passes = mesh_passes(module, options.logical_nc_config) + full_pipeline(options)
    manager = PassManager(passes, print_after=options.print_ir_after,
                          emit=emit, before_pass=progress,
                          after_pass=temps.after_pass if temps else None)
    try:
        if temps is not None:
            temps.module("frontend", module)
        manager.run(module)
        if progress is not None and options.logical_nc_config > 1:
            progress("shard")
        cores, shard_timings = core_programs(module, options.logical_nc_config,
                                             options.print_ir_after, emit)
        for core in cores:  # fusion, on each core's own program
            shard_timings += PassManager(core_pipeline(), print_after=options.print_ir_after,
                                         emit=emit).run_timed(core)
    except PassFailure as exc:
        raise CompileError(VERIFICATION_FAILED, str(exc).splitlines()[0]) from exc
    timings = manager.timings + shard_timings
    _warn_passes_not_run(options.print_ir_after, [t[0] for t in timings])
    estimates = check_peak_hbm(cores, options.target, options.logical_nc_config)
    flags = options.output_flags()
    spec = NeffSpec(
        target=options.target,
        lnc=options.logical_nc_config,
        name=name,
        compress=not options.fast_loading,
        compiler={"optlevel": options.optlevel,
                  "passes": [t[0] for t in timings],
                  "framework": framework,
                  "version": NXCC_VERSION,
                  "flags": flags},
        state=state,
        estimates=tuple(estimates),
    )
    if progress is not None:
        progress("write")
    try:
        header = write_program_neff(options.output, cores, spec)
    except UnloadableNeff as exc:
        raise CompileError(RUNTIME_LIMIT, f"the compiled program would not load: "
                           f"{exc.problem} (runtime code {exc.code}); no NEFF written") from None
    except OSError as exc:
        raise write_error(options.output, exc) from None
    except NeffError as exc:
        raise CompileError(BAD_ARGUMENT, f"cannot write {options.output!r}: {exc}") from None
    if temps is not None:
        temps.finish(cores, options.output, {"framework": framework, **flags})
    return CompileResult(options.output, header, timings, module)
