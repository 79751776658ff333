"""Fused ops, made by the fusion pass (`passes/fusion`) after every other pass.

`fused_elementwise` evaluates a chain of elementwise ops (a `nxcc.ir.fused_program` text:
operand broadcasts, then one step per op) in one kernel, block by block in place, so no
intermediate of the chain is ever a full-size array. Its result has the `shape` attribute
and the element type of the program's last step. `fused_convolution` is a convolution whose
result such a program finishes in place (bias, activation, residual), made of a convolution
and the one elementwise op or `fused_elementwise` that alone reads it.
"""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.fused_program import FusedProgramError, parse_program
from nxcc.ir.opdef import AttrSpec, OpDef, TypeRuleError, define
from nxcc.ir.ops._rules import fail
from nxcc.ir.ops.linalg import CONV_ATTRS
from nxcc.ir.ops.linalg import _convolution as convolution_type
from nxcc.ir.types import TensorType


def _program_result(name, ts, attrs, shape):
    """The element type of the program of `attrs` over operands of types `ts` (each mapped
    into `shape` as the program says), or the type rule's error."""
    try:
        program = parse_program(str(attrs["program"]))
    except FusedProgramError as exc:
        raise fail(f"{name}: {exc}") from None
    if len(program.operand_dims) != len(ts):
        raise fail(f"{name}: the program maps {len(program.operand_dims)} operands, "
                   f"the op has {len(ts)}")
    for k, (t, dims) in enumerate(zip(ts, program.operand_dims, strict=True)):
        if t.rank != len(dims) or any(d >= len(shape) for d in dims) or any(
                n not in (1, shape[d]) for n, d in zip(t.shape, dims, strict=True)):
            raise fail(f"{name}: operand a{k} {t} does not map to {list(dims)} of "
                       f"{list(shape)}")
    for s in program.steps:
        opdef = s.opdef
        if not opdef.elementwise or opdef.side_effects:
            raise fail(f"{name}: {s.opcode} is not an elementwise op")
        if opdef.operands is not None and opdef.operands != len(s.args):
            raise fail(f"{name}: {s.opcode} takes {opdef.operands} operands, "
                       f"the step gives {len(s.args)}")
    try:
        dtypes = program.step_dtypes([t.dtype for t in ts])
    except TypeRuleError as exc:
        raise fail(f"{name}: {exc}") from None
    return program, dtypes[-1]


def _fused_elementwise(ts, attrs, module):
    shape = tuple(attrs["shape"])
    _, dtype = _program_result("fused_elementwise", ts, attrs, shape)
    return [TensorType(dtype, shape)]


fused_elementwise = define(OpDef(
    "fused_elementwise", _fused_elementwise,
    attrs={"program": AttrSpec(AttrKind.STR), "shape": AttrSpec(AttrKind.INTS)},
    min_operands=1,
    doc="A chain of elementwise ops evaluated in one pass, block by block (ir/fused_program)."))


def _fused_convolution(ts, attrs, module):
    if len(ts) < 2:
        raise fail(f"fused_convolution: takes the convolution's two operands and the "
                   f"epilogue's, got {len(ts)} operands")
    (product,) = convolution_type(ts[:2], attrs, module)
    program, dtype = _program_result("fused_convolution", [product, *ts[2:]], attrs,
                                     product.shape)
    if program.operand_dims[0] != tuple(range(product.rank)) or dtype != product.dtype:
        raise fail(f"fused_convolution: the program's a0 must be the convolution's result "
                   f"{product} (every dimension) and its result of that element type")
    return [product]


fused_convolution = define(OpDef(
    "fused_convolution", _fused_convolution,
    attrs={**CONV_ATTRS, "program": AttrSpec(AttrKind.STR)}, min_operands=2,
    doc="A convolution, then an elementwise program on its result (a0) in place."))


def _row_op(name: str):
    def rule(ts, attrs, module):
        x = ts[0]
        if not x.dtype.is_float or x.rank == 0:
            raise fail(f"{name}: operand {x} must be a float tensor of rank >= 1")
        if not 0 <= int(attrs["dimension"]) < x.rank:
            raise fail(f"{name}: dimension {attrs['dimension']} is not one of {x}")
        return [x]

    return rule


softmax = define(OpDef(
    "softmax", _row_op("softmax"), attrs={"dimension": AttrSpec(AttrKind.INT)}, operands=1,
    doc="exp(x - max) / sum(exp(x - max)) along `dimension` (made by the fusion pass)."))

layer_norm = define(OpDef(
    "layer_norm", _row_op("layer_norm"),
    attrs={"dimension": AttrSpec(AttrKind.INT), "epsilon": AttrSpec(AttrKind.FLOAT)},
    operands=1,
    doc="(x - mean) * rsqrt(mean((x - mean)^2) + epsilon) along `dimension`."))
