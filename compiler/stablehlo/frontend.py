"""Entry points: recognise MLIR text, and turn it into an IR module."""

from __future__ import annotations

import gc
import os
import re

from nxcc.compiler.hlo import import_hlo
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.lower import lower_module
from nxcc.compiler.hlo.nodes import HloModule
from nxcc.compiler.stablehlo.parser import parse_mlir
from nxcc.compiler.stablehlo.to_hlo import to_hlo
from nxcc.compiler.stablehlo.verify import verify_module
from nxcc.ir.core import Module

_MLIR_START = re.compile(r'(?:\s|//[^\n]*\n|#\w+\s*=[^\n]*\n)*'
                         r'(?:module\b|func\.func\b|"builtin\.module"|"func\.func")')


def looks_like_mlir(text: str) -> bool:
    """True for MLIR text (a `module` or `func.func` first, after comments and #aliases);
    HLO text starts with `HloModule` or a computation."""
    return bool(_MLIR_START.match(text[:65536]))


def parse_stablehlo(text: str, source: str = "<mlir>") -> HloModule:
    """The HLO syntax tree of the StableHLO module `text` (HloError if malformed, or if
    MLIR's verifier would reject it: `verify`).

    The cyclic garbage collector is paused meanwhile: the parse allocates millions of small
    objects and no cycles, and the collector's passes over them would double its time."""
    paused = gc.isenabled()
    gc.disable()
    try:
        where = Source(text, source)
        return to_hlo(verify_module(parse_mlir(text, source), where), where)
    finally:
        if paused:
            gc.enable()


def import_stablehlo(path_or_text: str, source: str | None = None) -> Module:
    """The IR module of the StableHLO module in `path_or_text`: MLIR text, or the path of a
    file holding it (HloError when it cannot be read or compiled)."""
    if "\n" in path_or_text or looks_like_mlir(path_or_text):
        return lower_module(parse_stablehlo(path_or_text, source or "<mlir>"))
    try:
        with open(path_or_text, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise HloError(f"cannot read MLIR text from {path_or_text!r}: {exc}") from None
    return lower_module(parse_stablehlo(text, source or path_or_text))


def import_xla(path_or_text: str) -> Module:
    """The IR module of an XLA program of any form `compiler.hlo.import_hlo` reads, or of
    StableHLO text (recognised by its content, whatever the file's extension)."""
    text = _mlir_text(path_or_text)
    if text is not None:
        name = "<mlir>" if text is path_or_text else path_or_text
        return import_stablehlo(text, name)
    return import_hlo(path_or_text)


def _mlir_text(path_or_text: str) -> str | None:
    """The MLIR text `path_or_text` is or names; None when it is anything else."""
    if looks_like_mlir(path_or_text):
        return path_or_text
    if "\n" in path_or_text or not os.path.isfile(path_or_text):
        return None
    try:
        with open(path_or_text, "rb") as f:
            head = f.read(65536)
        if not looks_like_mlir(head.decode("utf-8", errors="replace")):
            return None
        with open(path_or_text, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise HloError(f"cannot read MLIR text from {path_or_text!r}: {exc}") from None
