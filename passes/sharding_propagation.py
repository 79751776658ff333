"""Sharding propagation, GSPMD style: from a few known shardings to every value.

`propagate(fn, seeds, strategies_of)` returns a sharding for every value of `fn` but
constants (a constant is whole in the program and each user takes its block for free, so it
has no sharding of its own). Seeds are never changed. Then, to a fixed point:

- forward, in program order: an op with a result still unknown and some operand known
  takes the strategy that agrees with the most known operand bytes (a constant agrees with
  any non-partial sharding); on a tie it prefers a split strategy that a split operand
  agrees with, then replicate, then a partial one (so a pending sum meets a replicated value
  by being reduced, not by spreading, and a replicated value is not split out of nowhere).
  When every operand is known and none agrees with any strategy, the op is replicated. Its
  unknown results take the strategy's shardings;
- backward, in reverse order: an op whose results are known and some operand unknown
  takes the strategy producing exactly those results that agrees best with its known
  operands; its unknown operands take the strategy's shardings (never a partial one).

Parameters still unknown at the fixed point are then replicated and the fixed point is
sought again (an op waiting for them can decide); values still unknown after that are
replicated. A partial strategy is never chosen forward while an operand is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ir.core import Function, Op, Value
from ir.sharding import Sharding
from passes.sharding_rules import Strategy

R = Sharding.replicated()
MAX_ROUNDS = 8
_PREFERENCE = {"split": 3, "batch": 3, "column": 3, "row": 2, "replicate": 2, "partial": 1}


def is_constant(v: Value) -> bool:
    return v.owner is not None and v.owner.opcode == "constant"


def _preference(s: Strategy) -> int:
    return _PREFERENCE.get(s.kind, 0)


def propagate(fn: Function, seeds: Mapping[int, Sharding],
              strategies_of: Callable[[Op], list[Strategy]]) -> dict[int, Sharding]:
    """Shardings (id(value) -> sharding) for every non-constant value of `fn`."""
    sh: dict[int, Sharding] = dict(seeds)
    _fixed_point(fn, sh, strategies_of)
    if any(id(v) not in sh for v in fn.params):
        for v in fn.params:
            sh.setdefault(id(v), R)
        _fixed_point(fn, sh, strategies_of)
    for op in fn.body:
        if op.opcode != "constant":
            for r in op.results:
                sh.setdefault(id(r), R)
    return sh


def _fixed_point(fn: Function, sh: dict[int, Sharding],
                 strategies_of: Callable[[Op], list[Strategy]]) -> None:
    for _ in range(MAX_ROUNDS):
        changed = False
        for op in fn.body:
            changed |= _forward(op, sh, strategies_of)
        for op in reversed(fn.body):
            changed |= _backward(op, sh, strategies_of)
        if not changed:
            return


def _agreement(op: Op, s: Strategy, sh: Mapping[int, Sharding]) -> int:
    """Bytes of the known operands whose sharding `s` takes as they are. A constant agrees
    with any non-partial sharding: each core takes its block of it at compile time."""
    score = 0
    for v, want in zip(op.operands, s.operands, strict=True):
        if is_constant(v):
            agrees = not want.is_partial
        else:
            agrees = sh.get(id(v)) == want
        if agrees:
            score += max(v.type.nbytes, 1)
    return score


def _forward_preference(op: Op, s: Strategy, sh: Mapping[int, Sharding]) -> int:
    """`_preference`, but a split strategy that no split operand agrees with (a broadcast
    of a replicated value, say) ranks below replicate: splits spread from split values."""
    p = _preference(s)
    if p < 3:
        return p
    from_split = any(sh.get(id(v)) == want and want.split_dim is not None
                     for v, want in zip(op.operands, s.operands, strict=True))
    return p if from_split else 1


def _forward(op: Op, sh: dict[int, Sharding],
             strategies_of: Callable[[Op], list[Strategy]]) -> bool:
    if op.opcode == "constant" or all(id(r) in sh for r in op.results):
        return False
    live = [v for v in op.operands if not is_constant(v)]
    known = [v for v in live if id(v) in sh]
    if not known:
        return False
    cands = [s for s in strategies_of(op)
             if all(sh.get(id(r)) in (None, s.results[i]) for i, r in enumerate(op.results))]
    if not cands:
        return False
    best = max(cands, key=lambda s: (_agreement(op, s, sh), _forward_preference(op, s, sh)))
    if len(known) < len(live) and best.kind == "partial":
        return False  # a partial result needs partial operands: wait for the others
    if not any(sh.get(id(v)) == want for v, want in zip(op.operands, best.operands,
                                                        strict=True) if not is_constant(v)):
        if len(known) < len(live):
            return False
        best = cands[0] if cands[0].kind == "replicate" else best
    changed = False
    for r, s in zip(op.results, best.results, strict=True):
        if id(r) not in sh:
            sh[id(r)] = s
            changed = True
    return changed


def _backward(op: Op, sh: dict[int, Sharding],
              strategies_of: Callable[[Op], list[Strategy]]) -> bool:
    if op.opcode == "constant":
        return False
    known = [(i, sh[id(r)]) for i, r in enumerate(op.results) if id(r) in sh]
    if not known:
        return False
    unknown = [v for v in op.operands if id(v) not in sh and not is_constant(v)]
    if not unknown:
        return False
    cands = [s for s in strategies_of(op) if all(s.results[i] == k for i, k in known)]
    if not cands:
        return False
    best = max(cands, key=lambda s: (_agreement(op, s, sh), _preference(s)))
    changed = False
    for v, want in zip(op.operands, best.operands, strict=True):
        if id(v) in sh or is_constant(v) or want.is_partial:
            continue
        sh[id(v)] = want
        changed = True
    return changed
