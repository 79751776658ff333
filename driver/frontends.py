"""Choosing the frontend for a model file: by its content (`driver.detect`), checked against
`--framework` when given, then by its extension.

XLA programs come in three forms: HLO text (`compiler.hlo`), the binary `HloModuleProto`
and StableHLO text. The readers of the last two are optional parts of the XLA frontend
(`compiler.hlo.proto.import_hlo_proto`, `compiler.stablehlo.import_stablehlo`); where one is
missing, such a file is refused in one line that says what the file is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from nxcc.driver.detect import (
    HLO_PROTO,
    STABLEHLO,
    UNKNOWN_BINARY,
    UNKNOWN_TEXT,
    Detected,
    detect,
)
from nxcc.driver.errors import CompileError
from nxcc.driver.options import framework_for

if TYPE_CHECKING:  # the cache's hit path chooses the framework without loading the IR
    from nxcc.ir.core import Module

#: kind -> (module, function) of the optional reader for that form of XLA program.
OPTIONAL_READERS = {
    HLO_PROTO: ("nxcc.compiler.hlo", "import_hlo"),  # it reads binary protos too
    STABLEHLO: ("nxcc.compiler.stablehlo", "import_stablehlo"),
}

#: (framework given, kind found) that its frontend cannot read: refused with what the file
#: looks like (unrecognised text given as XLA goes to the HLO parser, which says where).
UNREADABLE = {("XLA", UNKNOWN_BINARY), ("ONNX", UNKNOWN_TEXT)}


def choose_framework(path: str, framework: str | None) -> tuple[str, Detected]:
    """(framework, what the file looks like). NCC_EARG001 when `--framework` names another
    framework than the content shows, or when neither tells the framework."""
    try:
        found = detect(path)
    except OSError as exc:
        raise CompileError("NCC_EARG001", f"cannot read model file {path!r}: "
                           f"{exc.strerror or exc}") from None
    if framework is not None:
        given = framework_for(path, framework)
        if found.framework is not None and found.framework != given:
            raise CompileError("NCC_EARG001", f"--framework {given} given, but {path} looks "
                               f"like {found.description} (--framework {found.framework})")
        if found.framework is None and (given, found.kind) in UNREADABLE:
            raise CompileError("NCC_EARG001", f"--framework {given} given, but {path} is "
                               f"{found.description}")
        return given, found
    if found.framework is not None:
        return found.framework, found
    try:
        return framework_for(path, None), found
    except CompileError:
        raise CompileError("NCC_EARG001", f"cannot tell the framework of {path}: it looks "
                           f"like {found.description}; give --framework ONNX or XLA") from None


def optional_reader(kind: str) -> Callable[[str], Module] | None:
    """The reader of an optional XLA input form, or None if this build has none."""
    module_name, function = OPTIONAL_READERS[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # the reader exists but something it needs is missing: a real error
        return None
    return getattr(module, function, None)


def import_xla(path: str, found: Detected) -> Module:
    """The IR of the XLA program at `path` (HLO text, HloModuleProto or StableHLO)."""
    from nxcc.compiler.hlo import HloError, import_hlo

    if found.kind in OPTIONAL_READERS:
        reader = optional_reader(found.kind)
        if reader is None:
            raise CompileError("NCC_EARG001", f"{path} is {found.description}, which this "
                               "build of the XLA frontend cannot read; give HLO text "
                               "(jax: .as_text(dialect='hlo'))")
    else:
        reader = import_hlo
    try:
        return reader(path)
    except HloError as exc:
        raise CompileError(exc.code, str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CompileError("NCC_EFRM001", f"{path}: not a readable {found.description}: "
                           f"{exc}") from None
