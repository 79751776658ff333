"""Gradient rules of dot_general and convolution.

dot_general: each operand's cotangent is the result's cotangent contracted with the other
operand over the other's free dims, then transposed to the operand's layout.

convolution (the transposes of a linear map, as XLA and JAX derive them): the input's
cotangent is a convolution of the result's cotangent with the spatially reversed kernel,
input and output feature roles swapped, strides turned into lhs dilation; the kernel's is a
convolution of the input with the result's cotangent, batch taking the place of the
contracted feature, strides turned into rhs dilation. Feature groups move into the kernel's
feature dims (input) or become batch groups (kernel).

The cotangent enters each backward product in the other operand's element type, so a
product `autocast` runs in bf16 is differentiated in bf16 as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints, attr_ints2, attr_of
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


def _perm_to(order: Sequence[int]) -> tuple[int, ...]:
    """The transpose permutation putting dims listed as `order` (operand dim of each
    position) back in operand order."""
    return tuple(order.index(d) for d in range(len(order)))


@gradient_rule(ops.dot_general)
def _dot_general(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    lhs, rhs = op.operands
    a = op.attrs
    lb, rb = attr_ints(a, "lhs_batch_dims"), attr_ints(a, "rhs_batch_dims")
    lc, rc = attr_ints(a, "lhs_contracting_dims"), attr_ints(a, "rhs_contracting_dims")
    lfree = [d for d in range(lhs.type.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.type.rank) if d not in rb and d not in rc]
    nb = len(lb)
    g_batch = tuple(range(nb))
    g_lfree = tuple(range(nb, nb + len(lfree)))
    g_rfree = tuple(range(nb + len(lfree), g.type.rank))
    b = ctx.b
    out: list[Value | None] = [None, None]
    if ctx.needs(0):
        # [batch, lfree, rhs's remaining dims (= rc, ascending)] -> lhs layout
        t = b.dot_general(b.convert(g, rhs.type.dtype), rhs, lhs_batch_dims=g_batch,
                          rhs_batch_dims=rb, lhs_contracting_dims=g_rfree,
                          rhs_contracting_dims=tuple(rfree))
        order = [*lb, *lfree, *(lc[rc.index(d)] for d in sorted(rc))]
        out[0] = b.convert(b.transpose(t, permutation=_perm_to(order)), lhs.type.dtype)
    if ctx.needs(1):
        t = b.dot_general(b.convert(g, lhs.type.dtype), lhs, lhs_batch_dims=g_batch,
                          rhs_batch_dims=lb, lhs_contracting_dims=g_lfree,
                          rhs_contracting_dims=tuple(lfree))
        order = [*rb, *rfree, *(rc[lc.index(d)] for d in sorted(lc))]
        out[1] = b.convert(b.transpose(t, permutation=_perm_to(order)), rhs.type.dtype)
    return out


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _split_axis(ctx: GradContext, x: Value, axis: int, first: int) -> Value:
    """`x` with `axis` split into (first, size // first) at `axis`, `axis` + 1."""
    shape = list(x.type.shape)
    shape[axis:axis + 1] = [first, shape[axis] // first]
    return ctx.b.reshape(x, shape)


def _merge_axis(ctx: GradContext, x: Value, src: int, dst: int) -> Value:
    """`x` with axis `src` merged into (as the major part of) axis `dst` (numbered after
    `src` is removed)."""
    perm = [i for i in range(x.type.rank) if i != src]
    perm.insert(dst, src)
    moved = ctx.b.transpose(x, permutation=tuple(perm)) if perm != sorted(perm) else x
    shape = [x.type.shape[i] for i in range(x.type.rank) if i != src]
    shape[dst] *= x.type.shape[src]
    return ctx.b.reshape(moved, shape)


def _specs(a: Mapping[str, AttrValue]) -> tuple[list[int], list[int], list[int]]:
    """(lhs, rhs, out) dimension specs as JAX writes them: (batch|out-feature, feature|
    in-feature, spatial...)."""
    def spec(first: str, second: str, spatial: str) -> list[int]:
        return [attr_of(a, first, int), attr_of(a, second, int), *attr_ints(a, spatial)]

    return (spec("input_batch_dim", "input_feature_dim", "input_spatial_dims"),
            spec("kernel_output_feature_dim", "kernel_input_feature_dim", "kernel_spatial_dims"),
            spec("output_batch_dim", "output_feature_dim", "output_spatial_dims"))


def _conv_attrs(lhs: list[int], rhs: list[int], out: list[int], **rest: object) -> dict:
    return {"input_batch_dim": lhs[0], "input_feature_dim": lhs[1],
            "input_spatial_dims": tuple(lhs[2:]),
            "kernel_output_feature_dim": rhs[0], "kernel_input_feature_dim": rhs[1],
            "kernel_spatial_dims": tuple(rhs[2:]),
            "output_batch_dim": out[0], "output_feature_dim": out[1],
            "output_spatial_dims": tuple(out[2:]), **rest}


def _swap(spec: list[int]) -> list[int]:
    return [spec[1], spec[0], *spec[2:]]


def _conv_lhs_grad(ctx: GradContext, op: Op, g: Value) -> Value:
    lhs, rhs = op.operands
    a = op.attrs
    lspec, rspec, ospec = _specs(a)
    groups = attr_of(a, "feature_group_count", int)
    batch_groups = attr_of(a, "batch_group_count", int)
    kernel = rhs
    if groups > 1 or batch_groups > 1:
        kernel = _split_axis(ctx, kernel, rspec[0], max(groups, batch_groups))
        kernel = _merge_axis(ctx, kernel, rspec[0], rspec[1])
    padding = []
    for i in range(len(lspec) - 2):
        in_size = _dilate(lhs.type.shape[lspec[2 + i]], attr_ints(a, "lhs_dilation")[i])
        k_size = _dilate(kernel.type.shape[rspec[2 + i]], attr_ints(a, "rhs_dilation")[i])
        out_size = _dilate(g.type.shape[ospec[2 + i]], attr_ints(a, "window_strides")[i])
        before = k_size - attr_ints2(a, "padding")[i][0] - 1
        padding.append((before, in_size + k_size - 1 - out_size - before))
    b = ctx.b
    reversed_kernel = b.reverse(kernel, dimensions=tuple(rspec[2:]))
    gx = b.op(ops.convolution, [b.convert(g, rhs.type.dtype), reversed_kernel], _conv_attrs(
        ospec, _swap(rspec), lspec, window_strides=a["lhs_dilation"], padding=tuple(padding),
        lhs_dilation=a["window_strides"], rhs_dilation=a["rhs_dilation"],
        feature_group_count=max(groups, batch_groups), batch_group_count=1))
    if batch_groups > 1:
        gx = _split_axis(ctx, gx, lspec[1], batch_groups)
        gx = _merge_axis(ctx, gx, lspec[1], lspec[0])
    return b.convert(gx, lhs.type.dtype)


def _conv_rhs_grad(ctx: GradContext, op: Op, g: Value) -> Value:
    lhs, rhs = op.operands
    a = op.attrs
    lspec, rspec, ospec = _specs(a)
    groups = attr_of(a, "feature_group_count", int)
    batch_groups = attr_of(a, "batch_group_count", int)
    padding = []
    for i in range(len(lspec) - 2):
        in_size = _dilate(lhs.type.shape[lspec[2 + i]], attr_ints(a, "lhs_dilation")[i])
        k_size = _dilate(rhs.type.shape[rspec[2 + i]], attr_ints(a, "rhs_dilation")[i])
        out_size = _dilate(g.type.shape[ospec[2 + i]], attr_ints(a, "window_strides")[i])
        lo = attr_ints2(a, "padding")[i][0]
        padding.append((lo, (out_size - in_size) + (k_size - lo - 1)))
    gw = ctx.b.op(ops.convolution, [lhs, ctx.b.convert(g, lhs.type.dtype)], _conv_attrs(
        _swap(lspec), _swap(ospec), _swap(rspec), window_strides=a["rhs_dilation"],
        padding=tuple(padding), lhs_dilation=a["lhs_dilation"],
        rhs_dilation=a["window_strides"], feature_group_count=batch_groups,
        batch_group_count=groups))
    return ctx.b.convert(gw, rhs.type.dtype)


@gradient_rule(ops.convolution)
def _convolution(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [_conv_lhs_grad(ctx, op, g) if ctx.needs(0) else None,
            _conv_rhs_grad(ctx, op, g) if ctx.needs(1) else None]
