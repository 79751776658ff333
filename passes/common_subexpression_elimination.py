"""cse: ops with the same opcode, operands and attributes compute the same values once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Function, Module, Value
from nxcc.ir.rewrite import replace_uses


@dataclass(frozen=True)
class CommonSubexpressionElimination:
    """Replaces each op equal to an earlier one by the earlier one's results.

    Constants are compared by type and bytes. The later op is dropped.
    """

    name: ClassVar[str] = "cse"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            changed |= _cse(fn)
        return changed


def _cse(fn: Function) -> bool:
    seen: dict[tuple, list[Value]] = {}
    mapping: dict[Value, Value] = {}
    kept = []
    for op in fn.body:
        operands = [mapping.get(v, v) for v in op.operands]
        op.operands = operands
        if op.opdef.side_effects:  # two sends are two transfers
            kept.append(op)
            continue
        key = (op.opcode, tuple(id(v) for v in operands),
               tuple(sorted(op.attrs.items(), key=lambda kv: kv[0])))
        try:
            earlier = seen.get(key)
        except TypeError:  # an unhashable attribute: leave the op alone
            kept.append(op)
            continue
        if earlier is not None:
            for r, e in zip(op.results, earlier, strict=True):
                mapping[r] = e
            continue
        seen[key] = op.results
        kept.append(op)
    if not mapping:
        return False
    fn.body = kept
    replace_uses(fn, mapping)
    return True
