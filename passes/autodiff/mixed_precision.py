"""Mixed precision for training steps, as autocast does it: the matrix products in bf16.

`autocast(module, fn, dtype)` rewrites every dot_general and convolution of `fn` with f32
operands to take them converted to `dtype` (bf16) and still produce f32 (`result_dtype`), so
the products run in the low precision while parameters (the f32 master weights), reductions,
normalisations, the loss and the optimizer state stay f32. Their gradients follow: the
backward products take the cotangent in `dtype` too (see `rules/linalg.py`), and the
gradient of each convert brings the result back to f32 for the master weights.
"""

from __future__ import annotations

from nxcc.ir.core import Function, Module, Op
from nxcc.ir.dtypes import DType

LOW_PRECISION_OPS = frozenset({"dot_general", "convolution"})


def autocast(module: Module, fn: Function, dtype: DType = DType.BF16) -> int:
    """Rewrite `fn`'s f32 products to run in `dtype`; the number rewritten."""
    body: list[Op] = []
    count = 0
    for op in fn.body:
        if op.opcode in LOW_PRECISION_OPS and all(v.type.dtype is DType.F32
                                                  for v in op.operands):
            converts = [Op("convert", [v], [v.type.with_dtype(dtype)], {"dtype": dtype})
                        for v in op.operands]
            body += converts
            op.operands = [c.result for c in converts]
            op.attrs["result_dtype"] = DType.F32
            count += 1
        body.append(op)
    fn.body = body
    return count

