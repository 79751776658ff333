"""CHLO ops with no HLO opcode, as the HLO instructions that compute them.

JAX prints these in its StableHLO text (`chlo.square` for `x**2` and variances, `chlo.erfc`
for exact GELU, `chlo.erf_inv` for `jax.random.normal`, `chlo.sinh`...); XLA expands them
into plain HLO before it prints HLO text, and so does this module, with its own formulas:

- square: x * x.
- sinh, cosh, asin, acos, atan, asinh, acosh, atanh: closed forms on exp, expm1, log1p,
  sqrt and atan2, evaluated in float64 and rounded once for narrower floats (no overflow
  or cancellation where float32 would have them).
- erfc: 1 - erf(x) below 2.5, where it loses no float32 bits (in float64 it does: relative
  error up to 7.1e-13, measured on 4,000 points of [-6, 12]); from 2.5 on, exp(-x^2) /
  (sqrt(pi) f) with f the continued fraction x + (1/2)/(x + 1/(x + (3/2)/(x + ...))) of
  depth 40 (the float64 erf kernel's own way).
- erf_inv: M. Giles' single-precision polynomial (as XLA's float32 expansion) as the start,
  then two Newton steps on erf in float64: correct to float64 rounding for either width;
  +-1 give +-inf, |y| > 1 NaN.
- next_after: the bits of x moved one step towards y (from 0, to the smallest subnormal
  with y's sign; NaN if either is NaN; y when x == y).
- is_inf, is_pos_inf, is_neg_inf: comparisons with infinity.
- lgamma, digamma: the Lanczos approximation (g = 7, 9 coefficients, as XLA's expansion)
  and its log-derivative, in float64, with the reflection formulas below 1/2 (sin(pi x)
  taken on x less its nearest integer); lgamma is +inf and digamma NaN at 0 and the
  negative integers. Float32 results are within 0.5 ulp of the exact value scaled by
  max(|value|, 1); float64 within 4e-15 (lgamma) and 2.1e-15 (digamma) of it, measured on
  4,000 points of [-20, 1e6].

Every formula is elementwise, so the instructions fuse into one kernel. Operands of
integer type are refused with the op named (CHLO defines these on floats).
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.dtypes import numpy_dtype_of
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.compiler.stablehlo.attrs import AttrReader
from nxcc.compiler.stablehlo.builder import CompBuilder
from nxcc.compiler.stablehlo.registry import converts
from nxcc.compiler.stablehlo.syntax import Op

_FLOATS = ("f16", "bf16", "f32", "f64")
#: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single
#: precision: coefficients of w - 2.5 (w < 5) and of sqrt(w) - 3 (w >= 5), highest first,
#: w = -log((1 - y)(1 + y)); erfinv(y) = y * p(w).
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_ERFC_SPLIT = 2.5
_ERFC_DEPTH = 40


class _Exprs:
    """HLO instructions of one CHLO op, every one of the op's result dimensions; float64
    unless another element type is named."""

    def __init__(self, b: CompBuilder, op: Op) -> None:
        self.b, self.op = b, op
        out = op.out_types[0] if op.out_types else None
        x = b.operand_array(op, 0)
        if not isinstance(out, ArrayShape):
            raise HloError(f"expected a tensor result of {op.name}", b.conv.source, op.offset,
                           E.SEMANTIC)
        if x.dtype not in _FLOATS:
            raise HloError(f"expected a float operand of {op.name} ({', '.join(_FLOATS)}), "
                           f"found {x.dtype}", b.conv.source, op.offset, E.SEMANTIC)
        self.dims, self.dtype = out.dims, x.dtype

    def operand(self, k: int) -> str:
        return self.b.ref(self.op.operands[k], self.op.offset)

    def shape(self, dtype: str) -> ArrayShape:
        return ArrayShape(dtype, self.dims)

    def const(self, value: float, dtype: str = "f64") -> str:
        scalar = self.b.add("constant", ArrayShape(dtype, ()), [], {}, self.op,
                            literal=np.array(value, numpy_dtype_of(dtype)))
        return self.b.add("broadcast", self.shape(dtype), [scalar], {"dimensions": ()}, self.op)

    def un(self, opcode: str, x: str, dtype: str = "f64") -> str:
        return self.b.add(opcode, self.shape(dtype), [x], {}, self.op)

    def bin(self, opcode: str, x: str, y: str, dtype: str = "f64") -> str:
        return self.b.add(opcode, self.shape(dtype), [x, y], {}, self.op)

    def compare(self, direction: str, x: str, y: str) -> str:
        return self.b.add("compare", self.shape("pred"), [x, y], {"direction": direction},
                          self.op)

    def select(self, pred: str, a: str, c: str, dtype: str = "f64") -> str:
        return self.b.add("select", self.shape(dtype), [pred, a, c], {}, self.op)

    def convert(self, x: str, dtype: str) -> str:
        return self.b.add("convert", self.shape(dtype), [x], {}, self.op)

    def wide(self, k: int = 0) -> str:
        """Operand `k` in float64."""
        x = self.operand(k)
        return x if self.dtype == "f64" else self.convert(x, "f64")

    def result(self, wide: str) -> None:
        """Bind the op's result to `wide` (float64) rounded once to the op's type."""
        name = wide if self.dtype == "f64" else self.convert(wide, self.dtype)
        self.b.bind(self.op.results[0], name)


def _sqrt_one_minus_square(e: _Exprs, x: str) -> str:
    """sqrt((1 - x)(1 + x)), float64."""
    one = e.const(1.0)
    return e.un("sqrt", e.bin("multiply", e.bin("subtract", one, x),
                              e.bin("add", one, x)))


@converts("chlo.square")
def square(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.operand(0)
    b.bind(op.results[0], e.bin("multiply", x, x, e.dtype))


@converts("chlo.sinh")
def sinh(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """(expm1(x) - expm1(-x)) / 2: no cancellation near 0."""
    e = _Exprs(b, op)
    x = e.wide()
    up = e.un("exponential-minus-one", x)
    down = e.un("exponential-minus-one", e.un("negate", x))
    e.result(e.bin("multiply", e.bin("subtract", up, down), e.const(0.5)))


@converts("chlo.cosh")
def cosh(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.wide()
    both = e.bin("add", e.un("exponential", x),
                 e.un("exponential", e.un("negate", x)))
    e.result(e.bin("multiply", both, e.const(0.5)))


@converts("chlo.asin")
def asin(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.wide()
    e.result(e.bin("atan2", x, _sqrt_one_minus_square(e, x)))


@converts("chlo.acos")
def acos(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.wide()
    e.result(e.bin("atan2", _sqrt_one_minus_square(e, x), x))


@converts("chlo.atan")
def atan(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    e.result(e.bin("atan2", e.wide(), e.const(1.0)))


@converts("chlo.asinh")
def asinh(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); log|x| + log 2 past 1e150, where
    x^2 would overflow."""
    e = _Exprs(b, op)
    x = e.wide()
    ax = e.un("abs", x)
    one = e.const(1.0)
    sq = e.bin("multiply", ax, ax)
    root = e.un("sqrt", e.bin("add", one, sq))
    near = e.un("log-plus-one", e.bin("add", ax, e.bin("divide", sq, e.bin(
        "add", one, root))))
    far = e.bin("add", e.un("log", ax), e.const(math.log(2.0)))
    big = e.compare("GT", ax, e.const(1e150))
    magnitude = e.select(big, far, near)
    e.result(e.bin("multiply", e.un("sign", x), magnitude))


@converts("chlo.acosh")
def acosh(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """log1p((x - 1) + sqrt((x - 1)(x + 1))); log x + log 2 past 1e150; NaN below 1."""
    e = _Exprs(b, op)
    x = e.wide()
    one = e.const(1.0)
    less = e.bin("subtract", x, one)
    root = e.un("sqrt", e.bin("multiply", less, e.bin("add", x, one)))
    near = e.un("log-plus-one", e.bin("add", less, root))
    far = e.bin("add", e.un("log", x), e.const(math.log(2.0)))
    e.result(e.select(e.compare("GT", x, e.const(1e150)), far, near))


@converts("chlo.atanh")
def atanh(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """sign(x) log1p(2|x| / (1 - |x|)) / 2 (on |x|: near -1, 2x / (1 - x) would be about -1
    and log1p would lose its digits)."""
    e = _Exprs(b, op)
    x = e.wide()
    ax = e.un("abs", x)
    ratio = e.bin("divide", e.bin("add", ax, ax),
                  e.bin("subtract", e.const(1.0), ax))
    half = e.bin("multiply", e.un("sign", x), e.const(0.5))
    e.result(e.bin("multiply", e.un("log-plus-one", ratio), half))


@converts("chlo.erfc")
def erfc(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.wide()
    near = e.bin("subtract", e.const(1.0), e.un("erf", x))
    t = e.bin("maximum", x, e.const(_ERFC_SPLIT))  # the fraction's domain
    f = t
    for k in range(_ERFC_DEPTH, 0, -1):
        f = e.bin("add", t, e.bin("divide", e.const(0.5 * k), f))
    decay = e.un("exponential", e.un("negate", e.bin("multiply", t, t)))
    far = e.bin("divide", decay, e.bin("multiply", e.const(math.sqrt(math.pi)), f))
    e.result(e.select(e.compare("GE", x, e.const(_ERFC_SPLIT)), far, near))


def _horner(e: _Exprs, coefficients: tuple[float, ...], w: str) -> str:
    p = e.const(coefficients[0])
    for c in coefficients[1:]:
        p = e.bin("add", e.bin("multiply", p, w), e.const(c))
    return p


@converts("chlo.erf_inv")
def erf_inv(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    y = e.wide()
    one = e.const(1.0)
    w = e.un("negate", e.un("log", e.bin("multiply", e.bin("subtract", one, y),
                                         e.bin("add", one, y))))
    central = _horner(e, _ERFINV_CENTRAL, e.bin("subtract", w, e.const(2.5)))
    tail = _horner(e, _ERFINV_TAIL, e.bin("subtract", e.un("sqrt", w),
                                         e.const(3.0)))
    x = e.bin("multiply", y, e.select(e.compare("LT", w, e.const(5.0)), central, tail))
    slope = e.const(2.0 / math.sqrt(math.pi))
    for _ in range(2):  # Newton on erf(x) = y
        gap = e.bin("subtract", e.un("erf", x), y)
        grad = e.bin("multiply", slope, e.un("exponential", e.un("negate", e.bin(
            "multiply", x, x))))
        x = e.bin("subtract", x, e.bin("divide", gap, grad))
    edge = e.compare("EQ", e.un("abs", y), one)
    infinite = e.bin("multiply", y, e.const(math.inf))
    e.result(e.select(edge, infinite, x))


_BITS = {"f16": ("s16", 15), "bf16": ("s16", 15), "f32": ("s32", 31), "f64": ("s64", 63)}


@converts("chlo.next_after")
def next_after(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    dt = e.dtype
    ints, sign_bit = _BITS[dt]
    x, y = e.operand(0), e.operand(1)
    bits = e.b.add("bitcast-convert", e.shape(ints), [x], {}, op)
    y_bits = e.b.add("bitcast-convert", e.shape(ints), [y], {}, op)
    zero = e.const(0.0, dt)
    # away from zero when (x < y) == (x > 0): the magnitude's bits + 1, else - 1
    away = e.compare("EQ", e.compare("LT", x, y), e.compare("GT", x, zero))
    step = e.select(away, e.const(1, ints), e.const(-1, ints), ints)
    moved = e.bin("add", bits, step, ints)
    smallest = e.bin("or", e.bin("and", y_bits, e.const(-(1 << sign_bit), ints), ints),
                     e.const(1, ints), ints)
    out_bits = e.select(e.compare("EQ", x, zero), smallest, moved, ints)
    out = e.b.add("bitcast-convert", e.shape(dt), [out_bits], {}, op)
    out = e.select(e.compare("EQ", x, y), y, out, dt)
    nan = e.bin("or", e.compare("NE", x, x), e.compare("NE", y, y), "pred")
    b.bind(op.results[0], e.select(nan, e.bin("add", x, y, dt), out, dt))


@converts("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def is_inf(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e = _Exprs(b, op)
    x = e.operand(0)
    if op.name == "chlo.is_inf":
        x = e.un("abs", x, e.dtype)
    value = -math.inf if op.name == "chlo.is_neg_inf" else math.inf
    b.bind(op.results[0], e.compare("EQ", x, e.const(value, e.dtype)))


_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lanczos(e: _Exprs, x: str) -> tuple[str, str, str]:
    """(t, a, a') for x >= 1/2, float64: t = x + g - 1/2, a = c0 + sum c_k / (x - 1 + k),
    a' = -sum c_k / (x - 1 + k)^2 (the derivative of a)."""
    z = e.bin("subtract", x, e.const(1.0))
    a = e.const(_LANCZOS[0])
    slope = e.const(0.0)
    for k, c in enumerate(_LANCZOS[1:], start=1):
        d = e.bin("add", z, e.const(float(k)))
        term = e.bin("divide", e.const(c), d)
        a = e.bin("add", a, term)
        slope = e.bin("subtract", slope, e.bin("divide", term, d))
    t = e.bin("add", z, e.const(_LANCZOS_G + 0.5))
    return t, a, slope


def _reflected(e: _Exprs, x: str) -> tuple[str, str, str]:
    """(x < 1/2, the argument the approximation takes: x or 1 - x, x a pole: 0 or a
    negative integer)."""
    small = e.compare("LT", x, e.const(0.5))
    arg = e.select(small, e.bin("subtract", e.const(1.0), x), x)
    pole = e.bin("and", e.compare("LE", x, e.const(0.0)),
                 e.compare("EQ", e.un("floor", x), x), "pred")
    return small, arg, pole


def _pi_fraction(e: _Exprs, x: str) -> str:
    """pi r with r = x less its nearest integer: |sin(pi x)| = |sin(pi r)| and tan(pi x) =
    tan(pi r), without pi x's rounding for large x."""
    r = e.bin("subtract", x, e.un("round-nearest-even", x))
    return e.bin("multiply", r, e.const(math.pi))


def _gamma_parts(b: CompBuilder, op: Op
                 ) -> tuple[_Exprs, str, tuple[str, str, str], tuple[str, str, str]]:
    """What lgamma and digamma share: the op's expressions, x in float64, `_reflected(x)`
    and `_lanczos` of the argument it gives."""
    e = _Exprs(b, op)
    x = e.wide()
    reflected = _reflected(e, x)
    return e, x, reflected, _lanczos(e, reflected[1])


@converts("chlo.lgamma")
def lgamma(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e, x, (small, arg, pole), (t, series, _) = _gamma_parts(b, op)
    z = e.bin("subtract", arg, e.const(0.5))  # (arg - 1) + 1/2
    value = e.bin("add", e.bin("subtract", e.bin("multiply", z, e.un("log", t)),
                                t),
                  e.bin("add", e.const(0.5 * math.log(2 * math.pi)),
                        e.un("log", series)))
    sine = e.un("abs", e.un("sine", _pi_fraction(e, x)))
    reflected = e.bin("subtract", e.bin("subtract", e.const(math.log(math.pi)),
                                        e.un("log", sine)), value)
    out = e.select(small, reflected, value)
    out = e.select(pole, e.const(math.inf), out)
    infinite = e.compare("EQ", e.un("abs", x), e.const(math.inf))
    e.result(e.select(infinite, e.const(math.inf), out))


@converts("chlo.digamma")
def digamma(b: CompBuilder, op: Op, a: AttrReader) -> None:
    e, x, (small, arg, pole), (t, series, slope) = _gamma_parts(b, op)
    value = e.bin("subtract", e.bin("add", e.un("log", t),
                                    e.bin("divide", slope, series)),
                  e.bin("divide", e.const(_LANCZOS_G), t))
    angle = _pi_fraction(e, x)
    cot = e.bin("divide", e.un("cosine", angle), e.un("sine", angle))
    reflected = e.bin("subtract", value, e.bin("multiply", e.const(math.pi), cot))
    out = e.select(small, reflected, value)
    e.result(e.select(pole, e.const(math.nan), out))
