"""dot_general and convolution."""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_dims, fail, window_output_size
from nxcc.ir.types import TensorType


def _dot_general(ts, attrs, module):
    lhs, rhs = ts
    lb, rb = attrs["lhs_batch_dims"], attrs["rhs_batch_dims"]
    lc, rc = attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"]
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise fail("dot_general: lhs and rhs need as many batch and contracting dims")
    check_dims("dot_general", "lhs dimension", (*lb, *lc), lhs.rank)
    check_dims("dot_general", "rhs dimension", (*rb, *rc), rhs.rank)
    for a, b in (*zip(lb, rb, strict=True), *zip(lc, rc, strict=True)):
        if lhs.shape[a] != rhs.shape[b]:
            raise fail(
                f"dot_general: lhs dim {a} (size {lhs.shape[a]}) does not match rhs dim {b} "
                f"(size {rhs.shape[b]}) in {lhs} x {rhs}"
            )
    if lhs.dtype != rhs.dtype:
        raise fail(f"dot_general: operands {lhs} and {rhs} have different element types")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    shape = (
        tuple(lhs.shape[d] for d in lb)
        + tuple(lhs.shape[d] for d in lfree)
        + tuple(rhs.shape[d] for d in rfree)
    )
    dtype = attrs["result_dtype"] or lhs.dtype
    return [TensorType(dtype, shape)]


dot_general = define(
    OpDef(
        "dot_general",
        _dot_general,
        attrs={
            "lhs_batch_dims": AttrSpec(AttrKind.INTS, ()),
            "rhs_batch_dims": AttrSpec(AttrKind.INTS, ()),
            "lhs_contracting_dims": AttrSpec(AttrKind.INTS),
            "rhs_contracting_dims": AttrSpec(AttrKind.INTS),
            "result_dtype": AttrSpec(AttrKind.DTYPE, None),
        },
        operands=2,
        doc="Result dims: batch, lhs free, rhs free (HLO order).",
    )
)

CONV_ATTRS = {
    "window_strides": AttrSpec(AttrKind.INTS),
    "padding": AttrSpec(AttrKind.INTS2),
    "lhs_dilation": AttrSpec(AttrKind.INTS),
    "rhs_dilation": AttrSpec(AttrKind.INTS),
    "feature_group_count": AttrSpec(AttrKind.INT, 1),
    "batch_group_count": AttrSpec(AttrKind.INT, 1),
    "input_batch_dim": AttrSpec(AttrKind.INT),
    "input_feature_dim": AttrSpec(AttrKind.INT),
    "input_spatial_dims": AttrSpec(AttrKind.INTS),
    "kernel_input_feature_dim": AttrSpec(AttrKind.INT),
    "kernel_output_feature_dim": AttrSpec(AttrKind.INT),
    "kernel_spatial_dims": AttrSpec(AttrKind.INTS),
    "output_batch_dim": AttrSpec(AttrKind.INT),
    "output_feature_dim": AttrSpec(AttrKind.INT),
    "output_spatial_dims": AttrSpec(AttrKind.INTS),
    "result_dtype": AttrSpec(AttrKind.DTYPE, None),
}


def _convolution(ts, attrs, module):
    lhs, rhs = ts
    n = len(attrs["input_spatial_dims"])
    for key in ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                "kernel_spatial_dims", "output_spatial_dims"):
        if len(attrs[key]) != n:
            raise fail(f"convolution: {key} has {len(attrs[key])} entries, expected {n}")
    if lhs.rank != n + 2 or rhs.rank != n + 2:
        raise fail(f"convolution: operands {lhs} and {rhs} must have rank {n + 2}")
    if lhs.dtype != rhs.dtype:
        raise fail(f"convolution: operands {lhs} and {rhs} have different element types")
    in_dims = (attrs["input_batch_dim"], attrs["input_feature_dim"], *attrs["input_spatial_dims"])
    k_dims = (attrs["kernel_input_feature_dim"], attrs["kernel_output_feature_dim"],
              *attrs["kernel_spatial_dims"])
    out_dims = (attrs["output_batch_dim"], attrs["output_feature_dim"],
                *attrs["output_spatial_dims"])
    for what, dims in (("input", in_dims), ("kernel", k_dims), ("output", out_dims)):
        check_dims("convolution", f"{what} dimension", dims, n + 2)
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    cin = lhs.shape[attrs["input_feature_dim"]]
    kin = rhs.shape[attrs["kernel_input_feature_dim"]]
    kout = rhs.shape[attrs["kernel_output_feature_dim"]]
    if groups < 1 or batch_groups < 1 or cin != kin * groups or kout % groups:
        raise fail(
            f"convolution: input features {cin} must equal kernel input features {kin} x "
            f"feature_group_count {groups}, and output features {kout} divide by it"
        )
    batch = lhs.shape[attrs["input_batch_dim"]]
    if batch % batch_groups or kout % batch_groups:
        raise fail(f"convolution: batch_group_count {batch_groups} must divide batch and features")
    shape = [0] * (n + 2)
    shape[attrs["output_batch_dim"]] = batch // batch_groups
    shape[attrs["output_feature_dim"]] = kout
    for i in range(n):
        lo, hi = attrs["padding"][i]
        shape[attrs["output_spatial_dims"][i]] = window_output_size(
            lhs.shape[attrs["input_spatial_dims"][i]],
            rhs.shape[attrs["kernel_spatial_dims"][i]],
            attrs["window_strides"][i], lo, hi,
            attrs["lhs_dilation"][i], attrs["rhs_dilation"][i],
        )
    return [TensorType(attrs["result_dtype"] or lhs.dtype, tuple(shape))]


convolution = define(OpDef("convolution", _convolution, attrs=CONV_ATTRS, operands=2,
             doc="HLO convolution (cross-correlation) with explicit dimension numbers."))
