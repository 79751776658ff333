"""Opcode -> lowering handler. Each `lower_*` module registers the opcodes it lowers."""

from __future__ import annotations

from collections.abc import Callable

from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.ir.registry import Registry

Handler = Callable[[InstrContext], Tree]

#: HLO opcode -> its lowering.
HANDLERS: Registry[str, Handler] = Registry("HLO lowering")

#: ``@handles("add", ...)`` registers the decorated function as the lowering of those opcodes.
handles = HANDLERS.register
