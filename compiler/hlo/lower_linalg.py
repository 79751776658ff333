"""dot and convolution."""

from __future__ import annotations

from nxcc.compiler.hlo.attributes import ConvDims, Window
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value


def _common_dtype(cx: InstrContext, a: Value, b: Value) -> tuple[Value, Value]:
    """Operands of one element type (the wider one) as the IR's dot/convolution need."""
    if a.type.dtype is b.type.dtype:
        return a, b
    wide = a.type.dtype if a.type.dtype.itemsize >= b.type.dtype.itemsize else b.type.dtype
    return (cx.emit1(ops.convert, [a], {"dtype": wide}) if a.type.dtype is not wide else a,
            cx.emit1(ops.convert, [b], {"dtype": wide}) if b.type.dtype is not wide else b)


@converts("dot")
def lower_dot(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    lhs, rhs = _common_dtype(cx, cx.value(0), cx.value(1))
    out = cx.out_type
    return cx.emit1(ops.dot_general, [lhs, rhs], {
        "lhs_batch_dims": cx.attr_as("lhs_batch_dims", tuple, ()),
        "rhs_batch_dims": cx.attr_as("rhs_batch_dims", tuple, ()),
        "lhs_contracting_dims": cx.attr_as("lhs_contracting_dims", tuple, ()),
        "rhs_contracting_dims": cx.attr_as("rhs_contracting_dims", tuple, ()),
        "result_dtype": out.dtype if out.dtype is not lhs.type.dtype else None,
    })


@converts("convolution")
def lower_convolution(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    lhs, rhs = _common_dtype(cx, cx.value(0), cx.value(1))
    dims = cx.attr("dim_labels")
    assert isinstance(dims, ConvDims)
    n = len(dims.input_spatial)
    window = cx.attr("window", None)
    if window is None:
        window = Window((), (1,) * n, ((0, 0),) * n, (1,) * n, (1,) * n, (0,) * n)
    assert isinstance(window, Window)
    if window.rank != n:
        raise cx.attr_error("window", f"expected a window of {n} spatial dimensions (as "
                            f"dim_labels says), found {window.rank}")
    kernel_sizes = tuple(rhs.type.shape[d] for d in dims.kernel_spatial)
    if window.size and window.size != kernel_sizes:
        raise cx.attr_error("window", f"expected window size {'x'.join(map(str, kernel_sizes))}"
                            f" (the kernel's spatial sizes), found "
                            f"{'x'.join(map(str, window.size))}")
    flip = tuple(dims.kernel_spatial[i] for i, r in enumerate(window.rhs_reversal) if r)
    if flip:
        rhs = cx.emit1(ops.reverse, [rhs], {"dimensions": flip})
    out = cx.out_type
    return cx.emit1(ops.convolution, [lhs, rhs], {
        "window_strides": window.stride,
        "padding": window.pad,
        "lhs_dilation": window.lhs_dilate,
        "rhs_dilation": window.rhs_dilate,
        "feature_group_count": cx.attr("feature_group_count", 1),
        "batch_group_count": cx.attr("batch_group_count", 1),
        "input_batch_dim": dims.input_batch,
        "input_feature_dim": dims.input_feature,
        "input_spatial_dims": dims.input_spatial,
        "kernel_input_feature_dim": dims.kernel_input,
        "kernel_output_feature_dim": dims.kernel_output,
        "kernel_spatial_dims": dims.kernel_spatial,
        "output_batch_dim": dims.output_batch,
        "output_feature_dim": dims.output_feature,
        "output_spatial_dims": dims.output_spatial,
        "result_dtype": out.dtype if out.dtype is not lhs.type.dtype else None,
    })
