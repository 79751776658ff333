"""dce: remove ops whose results are never used, and functions nothing refers to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Function, Module
from nxcc.ir.rewrite import reachable_functions


@dataclass(frozen=True)
class DeadCodeElimination:
    """Removes unused ops (but those with side effects: send, recv) and unreachable
    functions."""

    name: ClassVar[str] = "dce"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            changed |= _sweep(fn)
        live = set(reachable_functions(module))
        for name in [n for n in module.functions if n not in live]:
            del module.functions[name]
            changed = True
        return changed


def _sweep(fn: Function) -> bool:
    """Drop dead ops of `fn`, walking backwards so chains of dead ops go in one sweep."""
    live: set[int] = {id(v) for v in fn.results}
    kept = []
    for op in reversed(fn.body):
        if op.opdef.side_effects or any(id(r) in live for r in op.results):
            kept.append(op)
            live.update(id(v) for v in op.operands)
    changed = len(kept) != len(fn.body)
    fn.body = kept[::-1]
    return changed
