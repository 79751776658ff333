"""Mixed precision for training steps, as autocast does it: the matrix products in bf16.

`autocast(module, fn, dtype)` rewrites every dot_general and convolution of `fn` with f32
operands to take them converted to `dtype` (bf16) and still produce f32 (`result_dtype`), so
the products run in the low precision while parameters (the f32 master weights), reductions,
normalisations, the loss and the optimizer state stay f32. Their gradients follow: the
backward products take the cotangent in `dtype` too (see `rules/linalg.py`), and the
gradient of each convert brings the result back to f32 for the master weights.

`keep_in` stores parameters themselves in bf16 (no f32 master copy): the update is computed
in f32 and rounded back with `round_to`, to nearest or stochastically (random bits from
`random_bits` keyed per parameter and by the step counter), so that updates smaller than
bf16's resolution still move the weights on average.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import replace_uses

LOW_PRECISION_OPS = frozenset({ops.dot_general, ops.convolution})


def autocast(module: Module, fn: Function, dtype: DType = DType.BF16) -> int:
    """Rewrite `fn`'s f32 products to run in `dtype`; the number rewritten."""
    body: list[Op] = []
    count = 0
    for op in fn.body:
        if op.opdef in LOW_PRECISION_OPS and all(v.type.dtype is DType.F32
                                                  for v in op.operands):
            converts = [Op(ops.convert, [v], [v.type.with_dtype(dtype)], {"dtype": dtype})
                        for v in op.operands]
            body += converts
            op.operands = [c.result for c in converts]
            op.attrs["result_dtype"] = DType.F32
            count += 1
        body.append(op)
    fn.body = body
    return count



def keep_in(fn: Function, params: Sequence[Value], dtype: DType) -> list[Value]:
    """Store `params` (f32 parameters of `fn`) in `dtype`: each becomes a `dtype` parameter
    of the same name, converted back to f32 where the program starts. Returns the new
    parameters; the old values, now defined by those converts, keep every use."""
    stored = []
    converts = []
    for p in params:
        low = Value(p.type.with_dtype(dtype), p.name)
        op = Op(ops.convert, [low], [p.type], {"dtype": p.type.dtype})
        converts.append(op)
        replace_uses(fn, {p: op.result})
        op.result.name = p.name
        stored.append(low)
        fn.params[fn.params.index(p)] = low
    fn.body[:0] = converts
    return stored


def round_to(b: Builder, x: Value, dtype: DType, key: int | None = None,
             counter: Value | None = None) -> Value:
    """f32 `x` rounded to bf16 `dtype`: to nearest, or stochastically when `key` is given
    (add 16 random bits below bf16's last bit, then truncate: rounds up with probability
    equal to the distance from the value below, so the expected result is `x`)."""
    if key is None:
        return b.convert(x, dtype)
    assert dtype is DType.BF16 and x.type.dtype is DType.F32 and counter is not None
    u32 = x.type.with_dtype(DType.U32)
    raw = b.bitcast_convert(x, dtype=DType.U32)
    noise = b.op(ops.random_bits, [b.constant(np.uint64(key)), counter],
                 {"shape": x.type.shape})
    noise = b.op(ops.and_, [noise, b.splat(0xFFFF, u32)])
    truncated = b.op(ops.and_, [b.add(raw, noise), b.splat(0xFFFF0000, u32)])
    return b.convert(b.bitcast_convert(truncated, dtype=DType.F32), dtype)
