"""The XLA HLO text frontend: HLO text (as XLA and JAX print it) -> IR module.

    from nxcc.compiler.hlo import import_hlo
    module = import_hlo("model.hlo")            # a path, or the text itself
    module = import_hlo(text, source="dump.txt")
    module = import_hlo("model.hlo.pb")         # a binary HloModuleProto (compiler.hlo.proto)

`import_hlo` raises `HloError` (``FILE:LINE:COL: expected ..., found ...``, the source line
and a caret; `.code` an NCC error code) for anything it cannot compile.
"""

from __future__ import annotations

import os

from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.lower import lower_module
from nxcc.compiler.hlo.nodes import HloModule
from nxcc.compiler.hlo.parser import parse_hlo
from nxcc.compiler.hlo.proto import load_hlo_proto
from nxcc.compiler.hlo.registry import CONVERTERS
from nxcc.ir.core import Module

#: every opcode the lowering converts (`lower` imports the lowering modules, which register)
SUPPORTED_OPCODES: tuple[str, ...] = tuple(sorted({*CONVERTERS, "parameter"}))


def read_hlo(path_or_text: str, source: str | None = None) -> tuple[str, str]:
    """(text, source name): `path_or_text` is HLO text when it spans lines or holds braces
    and is not an existing file; otherwise it is the path of the file to read."""
    is_text = "\n" in path_or_text or "{" in path_or_text or not path_or_text
    if is_text and (len(path_or_text) > 4096 or not os.path.isfile(path_or_text)):
        return path_or_text, source or "<hlo>"
    try:
        with open(path_or_text, encoding="utf-8") as f:
            return f.read(), source or path_or_text
    except (OSError, UnicodeDecodeError) as exc:
        raise HloError(f"cannot read HLO text from {path_or_text!r}: {exc}") from None


def import_hlo(path_or_text: str | bytes, source: str | None = None, engine: str = "fast"
               ) -> Module:
    """The IR module of the HLO module in `path_or_text` (a path or HLO text, or a binary
    HloModuleProto: its bytes or the path of a file holding one, detected by content).

    `engine` picks the parser: "fast" (hand-written, the default) or "lark" (the LALR
    grammar `hlo.lark`); both build the same syntax tree.
    """
    tree = load_hlo_proto(path_or_text, source)
    if tree is not None:
        return lower_module(tree)
    text, name = read_hlo(path_or_text, source)  # type: ignore[arg-type]
    return lower_module(parse(text, name, engine))


def parse(text: str, source: str = "<hlo>", engine: str = "fast") -> HloModule:
    """The syntax tree of HLO `text` with the chosen engine."""
    if engine == "lark":
        # lark builds its parser from the grammar when asked for, not for the fast engine
        from nxcc.compiler.hlo.lark_engine import parse_hlo_lark

        return parse_hlo_lark(text, source)
    if engine != "fast":
        raise ValueError(f"unknown HLO parser engine {engine!r} (fast or lark)")
    return parse_hlo(text, source)


__all__ = ["SUPPORTED_OPCODES", "HloError", "HloModule", "Source", "import_hlo", "parse",
           "parse_hlo", "read_hlo"]
