"""rng-bit-generator, expanded into integer IR ops exactly as XLA's RngBitGeneratorExpander
does (so a program gives the bits XLA gives): ThreeFry-2x32 (20 rounds) for
``algorithm=rng_three_fry``, Philox-4x32 (10 rounds) for ``rng_philox`` and for
``rng_default`` (the CPU and GPU backends' default). The state is u64[2] (key, counter), or
u64[3] for Philox (key, 128-bit counter). Output types: u8, u16, u32, u64 (signed types of
those widths through a bitcast).
"""

from __future__ import annotations

import math

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef
from nxcc.ir.types import TensorType

U32, U64 = DType.U32, DType.U64
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_UNSIGNED = {1: DType.U8, 2: DType.U16, 4: DType.U32, 8: DType.U64}


class _Ops:
    """Terse integer arithmetic on IR values (constants broadcast to the other operand)."""

    def __init__(self, cx: InstrContext) -> None:
        self.cx = cx

    def k(self, value: int, like: Value) -> Value:
        return self.cx.b.splat(value, like.type)

    def bin(self, op: OpDef, a: Value, b: Value | int) -> Value:
        if isinstance(b, int):
            b = self.k(b, a)
        return self.cx.emit1(op, [a, b])

    def add(self, a: Value, b: Value | int) -> Value:
        return self.bin(ops.add, a, b)

    def xor(self, a: Value, b: Value | int) -> Value:
        return self.bin(ops.xor, a, b)

    def convert(self, x: Value, dt: DType) -> Value:
        return x if x.type.dtype is dt else self.cx.emit1(ops.convert, [x], {"dtype": dt})

    def reshape(self, x: Value, shape: tuple[int, ...]) -> Value:
        return x if x.type.shape == shape else self.cx.emit1(ops.reshape, [x], {"shape": shape})

    def bcast(self, scalar: Value, shape: tuple[int, ...]) -> Value:
        return self.cx.emit1(ops.broadcast_in_dim, [scalar], {"shape": shape,
                                                            "broadcast_dimensions": ()})

    def slice1(self, x: Value, start: int, limit: int) -> Value:
        return self.cx.emit1(ops.slice, [x], {"start_indices": (start,),
                                            "limit_indices": (limit,), "strides": (1,)})

    def scalar_at(self, x: Value, i: int) -> Value:
        return self.reshape(self.slice1(x, i, i + 1), ())

    def split64(self, x: Value) -> tuple[Value, Value]:
        """(low, high) 32-bit words of u64 `x`."""
        return (self.convert(x, U32),
                self.convert(self.bin(ops.shift_right_logical, x, 32), U32))

    def join64(self, lo: Value, hi: Value) -> Value:
        return self.bin(ops.or_, self.convert(lo, U64),
                        self.bin(ops.shift_left, self.convert(hi, U64), 32))

    def iota(self, dt: DType, n: int) -> Value:
        return self.cx.emit1(ops.iota, [], {"dtype": dt, "shape": (n,), "dimension": 0})

    def concat(self, values: list[Value], dim: int) -> Value:
        return self.cx.emit1(ops.concatenate, values, {"dimension": dim})


def _threefry(o: _Ops, x0: Value, x1: Value, k0: Value, k1: Value) -> tuple[Value, Value]:
    """Threefry2x32 with 20 rounds; x0, x1 arrays, k0, k1 of their shape."""
    k2 = o.xor(o.xor(k1, k0), 0x1BD11BDA)
    ks = (k0, k1, k2)

    def rnd(a: Value, b: Value, r: int) -> tuple[Value, Value]:
        a = o.add(a, b)
        rot = o.bin(ops.or_, o.bin(ops.shift_left, b, r), o.bin(ops.shift_right_logical, b, 32 - r))
        return a, o.xor(a, rot)

    x0, x1 = o.add(x0, k0), o.add(x1, k1)
    for block in range(5):
        for r in _ROTATIONS[(block % 2) * 4:(block % 2) * 4 + 4]:
            x0, x1 = rnd(x0, x1, r)
        x0 = o.add(x0, ks[(block + 1) % 3])
        x1 = o.add(o.add(x1, ks[(block + 2) % 3]), block + 1)
    return x0, x1


def _split_halves(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """XLA's SplitShapeIntoHalves: (half shape with an inserted 1, split dim)."""
    if not shape:
        return (1,), 0
    even = [i for i, n in enumerate(shape) if n % 2 == 0]
    d = even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = (*shape[:d], (shape[d] + 1) // 2, 1, *shape[d + 1:])
    return half, d


def _threefry_bits(o: _Ops, key: Value, counter: Value, shape: tuple[int, ...], wide: bool
                   ) -> tuple[Value, Value]:
    """(u32 or u64 bits of `shape`, new counter) from scalar u64 key and counter."""
    k0, k1 = o.split64(key)
    gen = shape if wide else _split_halves(shape)[0]
    m = math.prod(gen)
    index = o.reshape(o.iota(U64, m), gen)
    inputs = o.add(o.bcast(counter, gen), index)
    x0, x1 = o.split64(inputs)
    y0, y1 = _threefry(o, x0, x1, o.bcast(k0, gen), o.bcast(k1, gen))
    new_counter = o.add(counter, m)
    if wide:
        return o.join64(y0, y1), new_counter
    if not shape:
        return o.reshape(o.slice1(y0, 0, 1), ()), new_counter
    _, d = _split_halves(shape)
    both = o.concat([y0, y1], d + 1)
    rounded = (*shape[:d], 2 * ((shape[d] + 1) // 2), *shape[d + 1:])
    bits = o.reshape(both, rounded)
    if rounded != shape:
        rank = len(shape)
        bits = o.cx.emit1(ops.slice, [bits], {"start_indices": (0,) * rank,
                                            "limit_indices": shape, "strides": (1,) * rank})
    return bits, new_counter


def _philox(o: _Ops, x: list[Value], k0: Value, k1: Value) -> list[Value]:
    """Philox4x32 with 10 rounds."""

    def mul(v: Value, m: int) -> tuple[Value, Value]:
        p = o.bin(ops.multiply, o.convert(v, U64), m)
        return o.convert(o.bin(ops.shift_right_logical, p, 32), U32), o.convert(p, U32)

    for _ in range(10):
        hi0, lo0 = mul(x[0], 0xD2511F53)
        hi1, lo1 = mul(x[2], 0xCD9E8D57)
        x = [o.xor(o.xor(hi1, x[1]), k0), lo1, o.xor(o.xor(hi0, x[3]), k1), lo0]
        k0, k1 = o.add(k0, 0x9E3779B9), o.add(k1, 0xBB67AE85)
    return x


def _philox_bits(o: _Ops, key: Value, low: Value, high: Value, shape: tuple[int, ...],
                 wide: bool) -> tuple[Value, Value, Value]:
    """(bits of `shape`, new counter low, new counter high): a 128-bit counter."""
    n = math.prod(shape)
    words = 2 * n if wide else n
    nv4 = (words + 3) // 4
    k0, k1 = o.split64(key)
    counts = o.iota(U64, nv4)
    lo = o.add(o.bcast(low, (nv4,)), counts)
    carry = o.cx.emit1(ops.compare, [lo, o.bcast(low, (nv4,))], {"direction": "LT"})
    hi = o.cx.emit1(ops.select, [carry, o.bcast(o.add(high, 1), (nv4,)), o.bcast(high, (nv4,))])
    state = [*o.split64(lo), *o.split64(hi)]
    out = _philox(o, state, o.bcast(k0, (nv4,)), o.bcast(k1, (nv4,)))
    if wide:
        parts = [o.join64(out[0], out[1]), o.join64(out[2], out[3])]
    else:
        parts = out
    columns = [o.reshape(p, (nv4, 1)) for p in parts]
    flat = o.reshape(o.concat(columns, 1), (nv4 * len(parts),))
    bits = o.reshape(o.slice1(flat, 0, n), shape)
    new_low = o.add(low, nv4)
    new_high = o.cx.emit1(ops.select, [o.cx.emit1(ops.compare, [new_low, low], {"direction": "LT"}),
                                     o.add(high, 1), high])
    return bits, new_low, new_high


@converts("rng-bit-generator")
def lower_rng_bit_generator(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    state = cx.value(0)
    shape = cx.instr.shape
    if not shape.is_tuple or len(shape.elements) != 2:  # type: ignore[union-attr]
        raise cx.error(f"expected a (state, bits) tuple shape, found {shape}")
    out = cx.ir_type(shape.elements[1])  # type: ignore[union-attr]
    if state.type.dtype is not U64 or state.type.rank != 1 or state.type.shape[0] < 2:
        raise cx.error(f"expected a u64[2] or u64[3] state, found {state.type}",
                       at=cx.instr.operands_offset)
    if out.dtype.itemsize not in _UNSIGNED or not (out.dtype.is_integer):
        raise cx.error(f"expected random bits of an integer type, found {out.dtype}",
                       E.UNSUPPORTED_FEATURE)
    algorithm = cx.attr("algorithm", "rng_default")
    o = _Ops(cx)
    key = o.scalar_at(state, 0)
    wide = out.dtype.itemsize == 8
    if algorithm == "rng_three_fry":
        bits, counter = _threefry_bits(o, key, o.scalar_at(state, 1), out.shape, wide)
        new_state = o.concat([o.reshape(key, (1,)), o.reshape(counter, (1,))], 0)
    elif algorithm in ("rng_philox", "rng_default"):
        if state.type.shape[0] >= 3:
            low, high = o.scalar_at(state, 1), o.scalar_at(state, 2)
        else:
            low, high = o.scalar_at(state, 1), key
        bits, new_low, new_high = _philox_bits(o, key, low, high, out.shape, wide)
        tail = [new_low, new_high] if state.type.shape[0] >= 3 else [new_low]
        new_state = o.concat([o.reshape(v, (1,)) for v in (key, *tail)], 0)
    else:
        raise cx.attr_error("algorithm", f"expected rng_three_fry, rng_philox or rng_default, "
                            f"found {algorithm}", E.UNSUPPORTED_FEATURE)
    unsigned = _UNSIGNED[out.dtype.itemsize]
    bits = o.convert(bits, unsigned)
    if unsigned is not out.dtype:
        bits = cx.emit1(ops.bitcast_convert, [bits], {"dtype": out.dtype})
    assert bits.type == TensorType(out.dtype, out.shape)
    return (new_state, bits)
