"""`nxcc.compile`: a model to a NEFF, as `neuronx-cc compile` does it.

The model is a path, the bytes of a model file, an `onnx.ModelProto`, or XLA program text
(HLO or StableHLO); the framework is told from the content as on the command line. A path
compiles through the compile cache exactly as `neuronx-cc compile` does (the same key, the
same entries, `cache_dir=` and `no_cache=True` as `--cache-dir` and `--no-cache`); a model
given in memory is written to a temporary file named `model` (an ONNX model: its graph's
name) and compiled from there. `training=True` compiles one training step (never cached).
Without `output` the NEFF is a temporary file that goes with the returned `Neff`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nxcc.backend.neff.artifact import Neff
from nxcc.driver.api.flags import ParsedFlags, parse_flags
from nxcc.driver.cache.layout import cache_location
from nxcc.driver.cache.store import CompileCache
from nxcc.driver.cached_compile import CachedCompile, compile_cached
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions
from nxcc.errors import BAD_ARGUMENT

if TYPE_CHECKING:
    import onnx

log = logging.getLogger("nxcc.compiler")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


@dataclass(frozen=True)
class Compiled:
    """A compile's NEFF, the options it ran with, and how the cache served it (None for a
    training step, which is not cached)."""

    neff: Neff
    options: CompileOptions
    cached: CachedCompile | None


def compile(model: str | os.PathLike[str] | bytes | onnx.ModelProto, *, target: str,
            lnc: int | None = None, output: str | os.PathLike[str] | None = None,
            **flags: object) -> Neff:
    """Compile `model` for `target` (trn1, trn1n, trn2, inf2) to a NEFF.

    `lnc`: physical cores per logical core (default: the target's, 2 on trn2). `output`:
    where to write the NEFF; without it the NEFF is a temporary file removed with the
    returned `Neff` (`save` keeps it). `flags`: the command
    line's flags in Python spelling (`optlevel=1`, `auto_cast="matmult"`,
    `input_shape={"x": (1, 3)}`, `no_cache=True`...). Raises `nxcc.CompileError` with the
    command line's code (NCC_EARG001 for a bad flag, naming the nearest known one)."""
    return compile_model(model, target=target, lnc=lnc, output=output, flags=flags).neff


def compile_model(model: Any, *, target: str, lnc: int | None = None,
                  output: str | os.PathLike[str] | None = None,
                  flags: Mapping[str, object] = {},  # noqa: B006 (never changed)
                  recorded: Sequence[tuple[str, str | None]] = (),
                  emit: Callable[[str], None] = print,
                  progress: Callable[[str], None] | None = None) -> Compiled:
    """`compile`, with what the command line also needs: `recorded`, the recorded flags as
    the command line spells them (`("--internal-foo", "1")`, in order); `emit` prints a
    line (the IR that `print_ir_after` asks for); `progress(stage)` is told each stage as it
    starts."""
    flags = dict(flags)
    if "logical_nc_config" in flags:  # the command line's long name of lnc
        if lnc is not None:
            raise CompileError(BAD_ARGUMENT, "give lnc or logical_nc_config, not both")
        lnc = flags.pop("logical_nc_config")  # type: ignore[assignment]
    parsed = parse_flags(flags)
    parsed.options["recorded_flags"] = tuple(parsed.recorded) + tuple(recorded)
    if parsed.options.get("save_temps") and not parsed.options.get("workdir"):
        parsed.options["workdir"] = tempfile.mkdtemp(prefix="neuroncc_compile_workdir_")
    work = tempfile.mkdtemp(prefix="nxcc-compile-")  # the model given in memory, the NEFF
    try:
        path = model_file(model, work)
        out = os.fspath(output) if output is not None else os.path.join(work, "model.neff")
        options = CompileOptions(target=str(target).lower(), lnc=lnc, output=out,
                                 **parsed.options)  # type: ignore[arg-type]
        cached = _compile(path, options, parsed, emit, progress)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if output is not None:
        shutil.rmtree(work, ignore_errors=True)
        return Compiled(Neff(out), options, cached)
    if path.startswith(work):
        os.unlink(path)
    return Compiled(Neff.owning(out, work), options, cached)


def _compile(path: str, options: CompileOptions, parsed: ParsedFlags,
             emit: Callable[[str], None], progress: Callable[[str], None] | None
             ) -> CachedCompile | None:
    if parsed.training:
        from nxcc.driver.train.compile_step import compile_training  # training, when asked
        from nxcc.driver.train.step_options import training_options

        required = dict.fromkeys(("loss", "loss_input", "label_input", "optimizer", "lr"))
        step = training_options(**{**required, **parsed.training_flags})  # type: ignore[arg-type]
        compile_training(path, options, step, emit=emit)
        return None
    cache = None
    if not parsed.no_cache:
        root, note = cache_location(parsed.cache_dir)
        if note:
            log.warning("%s", note)
        cache = CompileCache(root)
    return compile_cached(path, options, cache, emit=emit, progress=progress)


def model_file(model: Any, work: str) -> str:
    """A path holding `model` (see the module docstring): a path as given, else a file
    written in the directory `work`."""
    if isinstance(model, os.PathLike) or (isinstance(model, str) and not _is_text(model)):
        return os.fspath(model)
    name, data = _contents(model)
    path = os.path.join(work, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _is_text(model: str) -> bool:
    """A string is program text when it names no file and spans lines."""
    return "\n" in model and not os.path.exists(model)


def _contents(model: Any) -> tuple[str, bytes]:
    """(file name, bytes) of a model given in memory."""
    if isinstance(model, str):
        return "model", model.encode("utf-8")
    if isinstance(model, bytes | bytearray | memoryview):
        return "model", bytes(model)
    onnx = sys.modules.get("onnx")  # a ModelProto exists only once onnx is imported
    if onnx is not None and isinstance(model, onnx.ModelProto):
        name = model.graph.name if _SAFE_NAME.match(model.graph.name or "") else "model"
        return f"{name}.onnx", model.SerializeToString()
    raise CompileError(BAD_ARGUMENT, f"cannot compile a {type(model).__name__}: give a path, "
                       "the bytes of a model file, an onnx.ModelProto or XLA program text")


