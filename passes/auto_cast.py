"""auto-cast: compute f32 matrix multiplications (or all f32 arithmetic) in a narrower type.

`--auto-cast matmult` casts the f32 operands of every `dot_general` and `convolution` to the
`--auto-cast-type` (bf16, fp16, fp8_e4m3; tf32 rounds the f32 mantissa to 10 bits in place);
`--auto-cast all` does the same for the float elementwise arithmetic too. With
`accumulate_fp32` (`--enable-mixed-precision-accumulation`, the default) a contraction keeps
an f32 result (`result_dtype = f32`: low-precision products, f32 sums); without it the
result is rounded to the narrow type and converted back. Every cast op still hands an f32
value to its users, so the module's signature never changes.

    %y = dot_general(%a, %b) : f32[4,8]
      -> %a1 = convert(%a) {dtype = bf16}   %b1 = convert(%b) {dtype = bf16}
         %y  = dot_general(%a1, %b1) {result_dtype = f32} : f32[4,8]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import ElementwiseDef, OpDef, all_opdefs
from nxcc.passes.ir_edit import make_op, scalar_constant, substitute_results

#: `--auto-cast-type` -> the IR type computed in (None: tf32, rounded within f32).
CAST_TYPES: dict[str, DType | None] = {
    "bf16": DType.BF16, "fp16": DType.F16, "fp8_e4m3": DType.F8E4M3FN, "tf32": None,
}
#: `--auto-cast`: nothing, the matrix products, or all float arithmetic
MODES = ("none", "matmult", "all")
MATMUL_OPS: frozenset[OpDef] = frozenset({ops.dot_general, ops.convolution})
ARITHMETIC_OPS: frozenset[OpDef] = frozenset(
    d for d in all_opdefs() if isinstance(d, ElementwiseDef) and "float" in d.kinds
)


@dataclass
class _Caster:
    """Casts within one function, reusing one cast per value."""

    module: Module
    low: DType | None
    body: list[Op] = field(default_factory=list)
    casts: dict[int, Value] = field(default_factory=dict)

    def emit(self, op: Op) -> Value:
        self.body.append(op)
        return op.result

    def lower(self, v: Value) -> Value:
        """`v` (f32) in the compute type."""
        if id(v) in self.casts:
            return self.casts[id(v)]
        src = v.owner
        if (self.low is not None and src is not None and src.opdef is ops.convert
                and src.operands[0].type.dtype is self.low):
            low = src.operands[0]  # convert(convert(x: low) -> f32) -> low is x itself
        elif self.low is not None:
            low = self.emit(make_op(self.module, ops.convert, [v], {"dtype": self.low}))
        else:
            low = self.round_tf32(v)
        self.casts[id(v)] = low
        return low

    def round_tf32(self, v: Value) -> Value:
        """`v` rounded to TF32 (10 mantissa bits, nearest even), still as f32."""
        m = self.module
        bits = self.emit(make_op(m, ops.bitcast_convert, [v], {"dtype": DType.U32}))
        shift = self.emit(scalar_constant(m, 13, DType.U32))
        one = self.emit(scalar_constant(m, 1, DType.U32))
        half = self.emit(scalar_constant(m, 0xFFF, DType.U32))
        mask = self.emit(scalar_constant(m, 0xFFFFE000, DType.U32))
        shifted = self.emit(make_op(m, ops.shift_right_logical, [bits, self._b(shift, v)]))
        odd = self.emit(make_op(m, ops.and_, [shifted, self._b(one, v)]))
        up = self.emit(make_op(m, ops.add, [bits, self._b(half, v)]))
        up = self.emit(make_op(m, ops.add, [up, odd]))
        kept = self.emit(make_op(m, ops.and_, [up, self._b(mask, v)]))
        return self.emit(make_op(m, ops.bitcast_convert, [kept], {"dtype": DType.F32}))

    def _b(self, scalar: Value, like: Value) -> Value:
        """A scalar broadcast to the shape of `like`."""
        if like.type.rank == 0:
            return scalar
        return self.emit(make_op(self.module, ops.broadcast_in_dim, [scalar],
                                 {"shape": like.type.shape, "broadcast_dimensions": ()}))


@dataclass(frozen=True)
class AutoCast:
    """Casts f32 contractions (`mode` matmult) or all f32 arithmetic (`mode` all) to
    `cast_type`; leaves the IR valid and every value users see in its original type."""

    name: ClassVar[str] = "auto-cast"
    mode: str = "matmult"
    cast_type: str = "bf16"
    accumulate_fp32: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.cast_type not in CAST_TYPES:
            raise ValueError(f"cast_type {self.cast_type!r} is not one of "
                             f"{', '.join(CAST_TYPES)}")

    def run(self, module: Module) -> bool:
        if self.mode == "none":
            return False
        cast = MATMUL_OPS | (ARITHMETIC_OPS if self.mode == "all" else frozenset())
        changed = False
        for fn in module.functions.values():
            changed |= self._cast(module, fn, cast)
        return changed

    def _cast(self, module: Module, fn: Function, cast: frozenset[OpDef]) -> bool:
        caster = _Caster(module, CAST_TYPES[self.cast_type])
        subst: dict[int, Value] = {}
        for op in fn.body:
            op.operands = [subst.get(id(v), v) for v in op.operands]
            if not _is_f32_compute(op, cast):
                caster.body.append(op)
                continue
            new = self._recast(caster, op)
            out = new.result
            if out.type.dtype is not DType.F32:
                out = caster.emit(make_op(module, ops.convert, [out], {"dtype": DType.F32}))
            out.name = op.result.name
            subst[id(op.result)] = out
        changed = len(caster.body) != len(fn.body) or bool(subst)
        fn.body = caster.body
        substitute_results(fn, subst)
        return changed

    def _recast(self, caster: _Caster, op: Op) -> Op:
        """`op` rebuilt on the narrow operands (placed in the body)."""
        attrs = dict(op.attrs)
        if op.opdef in MATMUL_OPS:
            attrs.pop("result_dtype", None)
            if self.accumulate_fp32:
                attrs["result_dtype"] = DType.F32
        operands = [caster.lower(v) for v in op.operands]
        new = make_op(caster.module, op.opdef, operands, attrs)
        caster.body.append(new)
        return new


def _is_f32_compute(op: Op, cast: frozenset[OpDef]) -> bool:
    return (op.opdef in cast and len(op.results) == 1
            and op.result.type.dtype is DType.F32
            and all(v.type.dtype is DType.F32 for v in op.operands))
