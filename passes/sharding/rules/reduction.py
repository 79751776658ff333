"""Sharding rules of reduce, reduce_window, select_and_scatter and sort.

- reduce: a kept dimension splits through; a reduced dimension may be split when the reduce
  has one input, its computation is one associative binary op (add, multiply, maximum,
  minimum, and, or) and its init value is that op's identity: each device reduces its block
  and the result is a partial value pending that reduction. A reduce-sum of a partial sum
  is a partial sum;
- reduce_window, select_and_scatter: dimensions the window does not slide over (window 1,
  stride 1, no padding or dilation);
- sort: any dimension but the sorted one.
"""

from __future__ import annotations

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, Symbol, attr_ints, attr_of
from nxcc.ir.core import Module, Op
from nxcc.ir.opdef import OpDef
from nxcc.passes.sharding.rules.strategy import (
    R,
    Strategy,
    partial,
    replicate,
    rule,
    split,
    splittable,
)

#: binary op of a reducer -> the pending reduction of a partial value it leaves.
REDUCTION_OF: dict[OpDef, str] = {ops.add: "sum", ops.multiply: "prod", ops.maximum: "max",
                                  ops.minimum: "min", ops.and_: "and", ops.or_: "or"}


def reducer_kind(module: Module | None, sym: Symbol, dtype) -> str | None:
    """"sum", "max"... when @sym is one binary op of its two parameters; else None."""
    if module is None or sym.name not in module.functions:
        return None
    fn = module.functions[sym.name]
    if len(fn.body) != 1 or len(fn.params) != 2 or len(fn.results) != 1:
        return None
    op = fn.body[0]
    if fn.results[0] is not op.results[0] or {id(v) for v in op.operands} != \
            {id(p) for p in fn.params}:
        return None
    kind = REDUCTION_OF.get(op.opdef)
    if kind in ("and", "or") and not dtype.is_pred:
        return None
    return kind


def is_identity(value: Op | None, kind: str) -> bool:
    """Whether `value` (the op producing an init value) is the constant identity of `kind`."""
    if value is None or value.opdef is not ops.constant:
        return False
    d = attr_of(value.attrs, "value", Dense)
    if d.type.size != 1:
        return False
    x = d.array.reshape(-1)[0]
    t = d.type.dtype
    if t.is_pred:
        return bool(x) == (kind == "and")
    if kind == "sum":
        return x == 0
    if kind == "prod":
        return x == 1
    if t.is_float:
        v = float(x)
        return v == (-np.inf if kind == "max" else np.inf)
    try:
        info = np.iinfo(t.numpy)
    except ValueError:  # a narrow type numpy does not describe: do not split it
        return False
    return int(x) == (info.min if kind == "max" else info.max)


@rule(ops.reduce)
def reduce(op: Op, n: int, module: Module | None) -> list[Strategy]:
    k = len(op.operands) // 2
    src = op.operands[0].type
    dims = attr_ints(op.attrs, "dimensions")
    kept = [d for d in range(src.rank) if d not in dims]
    out = [replicate(op)]
    inits = tuple(R for _ in range(k))
    for pos, d in enumerate(kept):
        if splittable(src.shape[d], n):
            out.append(Strategy(f"split{d}", "split",
                                tuple(split(src.rank, d, n) for _ in range(k)) + inits,
                                tuple(split(r.type.rank, pos, n) for r in op.results)))
    if k != 1:
        return out
    kind = reducer_kind(module, attr_of(op.attrs, "computation", Symbol), op.results[0].type.dtype)
    if kind is None or not is_identity(op.operands[1].owner, kind):
        return out
    rank = op.results[0].type.rank
    for d in dims:
        if splittable(src.shape[d], n):
            out.append(Strategy(f"split{d} (partial {kind})", "partial",
                                (split(src.rank, d, n), R), (partial(rank, n, kind),)))
    if kind == "sum" and src.dtype.is_float:
        out.append(Strategy("partial", "partial", (partial(src.rank, n), R),
                            (partial(rank, n),)))
    return out


def _window_free(attrs, d: int, with_dilations: bool = True) -> bool:
    ok = (attrs["window_dimensions"][d] == 1 and attrs["window_strides"][d] == 1
          and tuple(attrs["padding"][d]) == (0, 0))
    if with_dilations:
        ok = ok and attrs["base_dilations"][d] == 1 and attrs["window_dilations"][d] == 1
    return ok


@rule(ops.reduce_window)
def reduce_window(op: Op, n: int, module: Module | None) -> list[Strategy]:
    k = len(op.operands) // 2
    src = op.operands[0].type
    out = [replicate(op)]
    for d in range(src.rank):
        if _window_free(op.attrs, d) and splittable(src.shape[d], n):
            s = split(src.rank, d, n)
            out.append(Strategy(f"split{d}", "split", (s,) * k + (R,) * k, (s,) * k))
    return out


@rule(ops.select_and_scatter)
def select_and_scatter(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src = op.operands[0].type
    out = [replicate(op)]
    for d in range(src.rank):
        if _window_free(op.attrs, d, with_dilations=False) and splittable(src.shape[d], n):
            s = split(src.rank, d, n)
            out.append(Strategy(f"split{d}", "split", (s, s, R), (s,)))
    return out


@rule(ops.sort)
def sort(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src = op.operands[0].type
    out = [replicate(op)]
    for d in range(src.rank):
        if d != op.attrs["dimension"] and splittable(src.shape[d], n):
            s = split(src.rank, d, n)
            out.append(Strategy(f"split{d}", "split", (s,) * len(op.operands),
                                (s,) * len(op.results)))
    return out
