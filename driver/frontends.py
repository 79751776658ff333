"""Choosing the frontend for a model file: by its content (`driver.detect`), checked against
`--framework` when given, then by its extension.

XLA programs come in three forms: HLO text and the binary `HloModuleProto`
(`compiler.hlo.import_hlo` reads both), and StableHLO text (`compiler.stablehlo`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nxcc.driver.detect import (
    STABLEHLO,
    UNKNOWN_BINARY,
    UNKNOWN_TEXT,
    Detected,
    detect,
)
from nxcc.driver.errors import CompileError
from nxcc.driver.options import framework_for
from nxcc.errors import BAD_ARGUMENT, MALFORMED_MODEL

if TYPE_CHECKING:  # the cache's hit path chooses the framework without loading the IR
    from nxcc.ir.core import Module

#: (framework given, kind found) that its frontend cannot read: refused with what the file
#: looks like (unrecognised text given as XLA goes to the HLO parser, which says where).
UNREADABLE = {("XLA", UNKNOWN_BINARY), ("ONNX", UNKNOWN_TEXT)}


def choose_framework(path: str, framework: str | None) -> tuple[str, Detected]:
    """(framework, what the file looks like). NCC_EARG001 when `--framework` names another
    framework than the content shows, or when neither tells the framework."""
    try:
        found = detect(path)
    except OSError as exc:
        raise CompileError(BAD_ARGUMENT, f"cannot read model file {path!r}: "
                           f"{exc.strerror or exc}") from None
    if framework is not None:
        given = framework_for(path, framework)
        if found.framework is not None and found.framework != given:
            raise CompileError(BAD_ARGUMENT, f"--framework {given} given, but {path} looks "
                               f"like {found.description} (--framework {found.framework})")
        if found.framework is None and (given, found.kind) in UNREADABLE:
            raise CompileError(BAD_ARGUMENT, f"--framework {given} given, but {path} is "
                               f"{found.description}")
        return given, found
    if found.framework is not None:
        return found.framework, found
    try:
        return framework_for(path, None), found
    except CompileError:
        raise CompileError(BAD_ARGUMENT, f"cannot tell the framework of {path}: it looks "
                           f"like {found.description}; give --framework ONNX or XLA") from None


def import_xla(path: str, found: Detected) -> Module:
    """The IR of the XLA program at `path` (HLO text, HloModuleProto or StableHLO)."""
    # the XLA frontends (numpy, lark) only for an XLA model: choose_framework, above, runs
    # on a compile-cache hit, which loads no numpy
    from nxcc.compiler.hlo import HloError, import_hlo
    from nxcc.compiler.stablehlo import import_stablehlo

    reader = import_stablehlo if found.kind == STABLEHLO else import_hlo  # text or proto
    try:
        return reader(path)
    except HloError as exc:
        raise CompileError(exc.code, str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CompileError(MALFORMED_MODEL, f"{path}: not a readable {found.description}: "
                           f"{exc}") from None
