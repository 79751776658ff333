"""Counter-based random numbers: random_bits (Philox4x32-10).

``random_bits(key, counter) {shape}`` is a pure function: element i of the u32 result is
word i % 4 of Philox4x32-10 keyed by the u64 `key` at the 128-bit counter
(i // 4, `counter`). The same key and counter always give the same bits, on every core and
rank; a training step passes its step counter so each step draws new numbers.
"""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_scalar, fail
from nxcc.ir.types import TensorType


def _random_bits(ts, attrs, module):
    for what, t in zip(("key", "counter"), ts, strict=True):
        check_scalar("random_bits", what, t)
        if t.dtype is not DType.U64:
            raise fail(f"random_bits: {what} must be u64, got {t}")
    return [TensorType(DType.U32, attrs["shape"])]


random_bits = define(OpDef("random_bits", _random_bits, attrs={"shape": AttrSpec(AttrKind.INTS)},
             operands=2, doc="Philox4x32-10 bits of (key, counter); see ir/ops/random.py."))
