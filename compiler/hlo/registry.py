"""Opcode -> lowering handler. Each `lower_*` module registers the opcodes it lowers."""

from __future__ import annotations

from collections.abc import Callable

from nxcc.compiler.hlo.context import InstrContext, Tree

Handler = Callable[[InstrContext], Tree]

HANDLERS: dict[str, Handler] = {}


def handles(*opcodes: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the lowering of each of `opcodes`."""

    def register(fn: Handler) -> Handler:
        for name in opcodes:
            if name in HANDLERS:
                raise ValueError(f"HLO opcode {name} registered twice")
            HANDLERS[name] = fn
        return fn

    return register
