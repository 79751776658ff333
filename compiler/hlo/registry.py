"""HLO opcode -> the function converting one instruction to core ops. Each `lower_*` module
registers the opcodes it converts with ``@converts("add", ...)``."""

from __future__ import annotations

from collections.abc import Callable

from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.ir.registry import Registry

Converter = Callable[[InstrContext], Tree]

#: HLO opcode -> its converter.
CONVERTERS: Registry[str, Converter] = Registry("HLO converter")

#: ``@converts("add", ...)`` registers the decorated function as the converter of those
#: opcodes.
converts = CONVERTERS.register
