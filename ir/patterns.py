"""Rewrite patterns and the greedy driver that applies them (as MLIR's and xDSL's do).

A `RewritePattern` names the ops it matches (`ops`: their definitions, `nxcc.ir.ops.x`; None
for every op) and, shown one of them, returns the values that replace its results, or None to
leave it. It may build new ops with the `Rewriter` it is given (`rewriter.b`, a `Builder`, or
`rewriter.insert`); they go before the matched op and are themselves shown to the patterns.

`apply_patterns` walks a function's ops in order, rewriting operands to the replacements found
so far, and sweeps again until a sweep changes nothing. A replaced op is dropped; ops left
without uses stay (dead code elimination removes them). Patterns are tried in the order given;
the first that returns values wins.

    @pattern(ops.negate)
    def double_negation(op: Op, rewriter: Rewriter) -> list[Value] | None:
        # negate(negate(x)) -> x
        inner = op.operands[0].owner
        return [inner.operands[0]] if inner is not None and inner.opdef is ops.negate else None

    changed = apply_patterns(module, [double_negation])
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import ClassVar

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.rewrite import reachable_functions

MAX_SWEEPS = 16


class Rewriter:
    """What a pattern builds with: `b` appends new ops before the matched op; `module` is the
    module being rewritten, `function` the function."""

    def __init__(self, module: Module, function: Function) -> None:
        self.module = module
        self.function = function
        self.inserted: list[Op] = []
        self.b = Builder(module, Function(function.name, function.params, self.inserted))

    def insert(self, op: Op) -> Op:
        """Insert `op`, built by hand, before the matched op."""
        self.inserted.append(op)
        return op

    def take(self) -> list[Op]:
        """The ops inserted since the last call, in order."""
        ops = list(self.inserted)
        self.inserted.clear()
        return ops


class RewritePattern:
    """One rewrite: `ops` says which ops it is shown (op definitions; None: all); `rewrite`
    returns the values replacing the op's results (same count and types), or None. An op is
    never updated in place: a pattern builds new ops instead."""

    ops: ClassVar[Collection[OpDef] | None] = None

    def matches(self, opdef: OpDef) -> bool:
        return self.ops is None or opdef in self.ops

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        raise NotImplementedError

    @property
    def label(self) -> str:
        return type(self).__name__


RewriteFn = Callable[[Op, Rewriter], Sequence[Value] | None]


class _FunctionPattern(RewritePattern):
    """A pattern made of a function by `pattern`."""

    def __init__(self, fn: RewriteFn, ops: tuple[OpDef, ...]) -> None:
        self.fn = fn
        self.opdefs = frozenset(ops)

    def matches(self, opdef: OpDef) -> bool:
        return opdef in self.opdefs

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        return self.fn(op, rewriter)

    @property
    def label(self) -> str:
        return self.fn.__name__


def pattern(*ops: OpDef | str) -> Callable[[RewriteFn], RewritePattern]:
    """Decorator: the function `(op, rewriter) -> values | None` as a pattern of `ops` (op
    definitions; a text name is looked up now, KeyError if no op has it)."""
    if not ops:
        raise ValueError("a pattern names at least one op")
    opdefs = tuple(get_opdef(o) if isinstance(o, str) else o for o in ops)
    return lambda fn: _FunctionPattern(fn, opdefs)


class _PatternTable:
    """The patterns shown each op, in the order given, computed once per op definition."""

    def __init__(self, patterns: Sequence[RewritePattern]) -> None:
        self.patterns = list(patterns)
        self.by_opdef: dict[OpDef, list[RewritePattern]] = {}

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        opdef = op.opdef
        found = self.by_opdef.get(opdef)
        if found is None:
            found = [p for p in self.patterns if p.matches(opdef)]
            self.by_opdef[opdef] = found
        for p in found:
            values = p.rewrite(op, rewriter)
            if values is not None:
                _check_replacement(p, op, values)
                return values
            rewriter.take()  # ops built by a pattern that declined are dropped
        return None


def apply_patterns(module: Module, patterns: Sequence[RewritePattern],
                   root: str | None = None) -> bool:
    """Rewrite every function of `module` (or, given `root`, that function and the functions
    it refers to) with `patterns` to a fixed point; whether anything changed."""
    names = list(module.functions) if root is None else reachable_functions(module, root)
    changed = False
    for name in names:
        changed |= bool(rewrite_function(module, module.functions[name], patterns))
    return changed


def rewrite_function(module: Module, fn: Function, patterns: Sequence[RewritePattern],
                     start: int = 0) -> dict[Value, Value]:
    """Rewrite the ops `fn.body[start:]` with `patterns` until a sweep changes nothing.

    Returns the map from each replaced result to its final value. Uses inside
    `fn.body[start:]` and `fn.results` are rewritten (ops before `start` cannot use the
    replaced values). RuntimeError if the patterns still change something after
    `MAX_SWEEPS` sweeps, or rewrite the ops built by rewrites `MAX_SWEEPS` times in a row
    (patterns that undo each other, or that never stop)."""
    table = _PatternTable(patterns)
    replaced: dict[Value, Value] = {}
    for _ in range(MAX_SWEEPS):
        found = _sweep(module, fn, table, start)
        if not found:
            return {k: _resolve(replaced, v) for k, v in replaced.items()}
        replaced.update(found)
    raise _unsettled(fn)


def _sweep(module: Module, fn: Function, table: _PatternTable, start: int
           ) -> dict[Value, Value]:
    """One walk over `fn.body[start:]`, new ops shown to the patterns as they are built; the
    results it replaced and their replacements."""
    mapping: dict[Value, Value] = {}
    rewriter = Rewriter(module, fn)
    kept: list[Op] = []
    # a stack, the next op last: (op, how many rewrites built it, one from another)
    pending = [(op, 0) for op in reversed(fn.body[start:])]
    while pending:
        op, depth = pending.pop()
        if mapping:
            op.operands = [_resolve(mapping, v) for v in op.operands]
        values = table.rewrite(op, rewriter)
        if values is None:
            kept.append(op)
            continue
        if depth >= MAX_SWEEPS:
            raise _unsettled(fn)
        mapping.update(zip(op.results, values, strict=True))
        pending.extend((new, depth + 1) for new in reversed(rewriter.take()))
    fn.body[start:] = kept
    if mapping:
        fn.results = [_resolve(mapping, v) for v in fn.results]
    return mapping


def _unsettled(fn: Function) -> RuntimeError:
    return RuntimeError(f"rewrite patterns on @{fn.name} still change it after "
                        f"{MAX_SWEEPS} rewrites in a row")


def _resolve(mapping: dict[Value, Value], v: Value) -> Value:
    """`v`'s final replacement (a replacement may itself have been replaced)."""
    while v in mapping:
        v = mapping[v]
    return v


def _check_replacement(p: RewritePattern, op: Op, values: Sequence[Value]) -> None:
    """ValueError unless `values` can replace `op`'s results: as many, of the same types,
    and not the op's own results (an op is not updated in place)."""
    if len(values) != len(op.results):
        raise ValueError(f"pattern {p.label} replaced the {len(op.results)} results of "
                         f"{op.opcode} by {len(values)} values")
    for r, v in zip(op.results, values, strict=True):
        if v is r:
            raise ValueError(f"pattern {p.label} returned {op.opcode}'s own result")
        if v.type != r.type:
            raise ValueError(f"pattern {p.label} replaced a {op.opcode} result of type "
                             f"{r.type} by a value of type {v.type}")
