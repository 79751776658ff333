"""Rewriting helpers shared by passes: use maps and replacing uses of values."""

from __future__ import annotations

from collections.abc import Mapping

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, Symbol, attr_of
from nxcc.ir.core import Function, Module, Op, Value


def constant_value(v: Value | None) -> Dense | None:
    """The value of `v` when a ``constant`` op defines it, else None."""
    if v is None or v.owner is None or v.owner.opdef is not ops.constant:
        return None
    return attr_of(v.owner.attrs, "value", Dense)


def replace_uses(fn: Function, mapping: Mapping[Value, Value]) -> int:
    """Make every use of a key of `mapping` in `fn` (operands, results) use its value.

    Returns the number of uses replaced. Keys are compared by identity.
    """
    by_id = {id(k): v for k, v in mapping.items()}
    count = 0
    for op in fn.body:
        for i, v in enumerate(op.operands):
            new = by_id.get(id(v))
            if new is not None:
                op.operands[i] = new
                count += 1
    for i, v in enumerate(fn.results):
        new = by_id.get(id(v))
        if new is not None:
            fn.results[i] = new
            count += 1
    return count


def use_counts(fn: Function) -> dict[int, int]:
    """id(value) -> number of uses (as an operand or a returned result) in `fn`."""
    counts: dict[int, int] = {}
    for op in fn.body:
        for v in op.operands:
            counts[id(v)] = counts.get(id(v), 0) + 1
    for v in fn.results:
        counts[id(v)] = counts.get(id(v), 0) + 1
    return counts


class LiveUseCounts:
    """Uses of each value of a function (by id) kept as pattern rewrites go: `use_counts`
    at the start, and a value a rewrite makes takes the count of the one it replaces
    (`replaced`). A count may be too high (a dead op's uses are still counted), never too
    low, so a value with other users is never taken for one read once."""

    def __init__(self, fn: Function) -> None:
        self.counts = use_counts(fn)

    def of(self, v: Value) -> int:
        return self.counts.get(id(v), 0)

    def replaced(self, old: Value, new: Value) -> Value:
        """`new`, now counted with the uses of `old` it takes over."""
        self.counts[id(new)] = self.of(new) + self.of(old)
        return new

def referenced_functions(op: Op) -> list[str]:
    """Names of the functions `op`'s attributes refer to."""
    names: list[str] = []
    for a in op.attrs.values():
        _symbols_into(a, names)
    return names


def _symbols_into(a: object, names: list[str]) -> None:
    """Append the names of the symbols in attribute value `a` (nested tuples) to `names`.
    (A module function, not a closure: a recursive closure is a reference cycle, and a
    compile made one per op, left to the cyclic collector.)"""
    if isinstance(a, Symbol):
        names.append(a.name)
    elif isinstance(a, tuple):
        for x in a:
            _symbols_into(x, names)


def reachable_functions(module: Module, root: str | None = None) -> list[str]:
    """Function `root` (by default the entry) and every function reachable from it by
    symbol references."""
    seen: list[str] = []
    stack = [module.entry if root is None else root]
    while stack:
        name = stack.pop()
        if name in seen or name not in module.functions:
            continue
        seen.append(name)
        for op in module.functions[name].body:
            stack.extend(referenced_functions(op))
    return seen
