"""Spectral operators: DFT, STFT and MelWeightMatrix.

A DFT of static length is a linear map of the (real, imaginary) input along its axis, so
it lowers to dot_generals with constant matrices. The matrices are numpy's own transform
(fft, ifft, or irfft for an inverse one-sided DFT, with numpy's zero-padding or truncation
to dft_length) applied to the identity at compile time. STFT gathers the frames (constant
indices), applies the window and takes the DFT of each; MelWeightMatrix is a compile-time
constant of its (constant) scalar inputs.
"""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, float_type_of
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value


def dft_matrices(in_len: int, n: int, inverse: bool, onesided: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """(re->re, re->im, im->re, im->im) [in_len, out_len] matrices of the transform, and
    whether its output is real only (irfft)."""
    eye = np.eye(in_len, dtype=np.complex128)
    if inverse and onesided:
        def transform(v: np.ndarray) -> np.ndarray:
            return np.fft.irfft(v, n=n, axis=1)
    elif inverse:
        def transform(v: np.ndarray) -> np.ndarray:
            return np.fft.ifft(v, n=n, axis=1)
    else:
        def transform(v: np.ndarray) -> np.ndarray:
            out = np.fft.fft(v, n=n, axis=1)
            return out[:, :n // 2 + 1] if onesided else out
    from_re, from_im = transform(eye), transform(1j * eye)
    real_only = inverse and onesided
    return (np.real(from_re), np.imag(from_re), np.real(from_im), np.imag(from_im), real_only)


def _contract(b: Builder, x: Value, m: np.ndarray, axis: int) -> Value:
    """x contracted along `axis` with constant matrix m [x.shape[axis], k]; the new dim of
    size k takes `axis`'s place."""
    out = b.dot_general(x, b.constant(m.astype(x.type.dtype.numpy)),
                        lhs_contracting_dims=(axis,), rhs_contracting_dims=(0,))
    rank = x.type.rank
    perm = [*range(axis), rank - 1, *range(axis, rank - 1)]
    return b.transpose(out, permutation=tuple(perm)) if perm != list(range(rank)) else out


def dft(b: Builder, x: Value, axis: int, n: int, inverse: bool, onesided: bool) -> Value:
    """The DFT of x [..., 1 or 2] along `axis` (< rank - 1): [..., 2] (or [..., 1] irfft)."""
    rank = x.type.rank
    lim = list(x.type.shape)
    lim[-1] = 1
    re = b.reshape(b.slice(x, start_indices=(0,) * rank, limit_indices=tuple(lim),
                           strides=(1,) * rank), x.type.shape[:-1])
    im = None
    if x.type.shape[-1] == 2:
        im = b.reshape(b.slice(x, start_indices=(*(0,) * (rank - 1), 1),
                               limit_indices=x.type.shape, strides=(1,) * rank),
                       x.type.shape[:-1])
    rr, ri, ir, ii, real_only = dft_matrices(x.type.shape[axis], n, inverse, onesided)
    out_re = _contract(b, re, rr, axis)
    out_im = _contract(b, re, ri, axis)
    if im is not None:
        out_re = b.add(out_re, _contract(b, im, ir, axis))
        out_im = b.add(out_im, _contract(b, im, ii, axis))
    parts = [out_re] if real_only else [out_re, out_im]
    parts = [b.reshape(p, (*p.type.shape, 1)) for p in parts]
    return parts[0] if len(parts) == 1 else b.concatenate(*parts, dimension=rank - 1)


@converts("DFT")
def convert_dft(ctx: NodeContext) -> list[Value]:
    """DFT-17 (axis attribute, default 1) and DFT-20 (axis input, default -2)."""
    x = ctx.input(0)
    float_type_of(ctx, x)
    rank = x.type.rank
    if ctx.opset >= 20:
        given = ctx.ints_input(2, "axis") if len(ctx.inputs) > 2 else None
        axis = given[0] if given else -2
    else:
        axis = int(ctx.attr("axis", 1))
    axis = ctx.axis(axis, rank)
    if axis == rank - 1 or x.type.shape[-1] not in (1, 2):
        raise ctx.fail(f"input {x.type} must end in a dim of 1 (real) or 2 (complex), and "
                       f"axis {axis} must be another dim")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    length = ctx.ints_input(1, "dft_length") if len(ctx.inputs) > 1 else None
    if length:
        n = length[0]
    elif inverse and onesided:
        n = 2 * (x.type.shape[axis] - 1)
    else:
        n = x.type.shape[axis]
    return [dft(ctx.b, x, axis, n, inverse, onesided)]


@converts("STFT")
def convert_stft(ctx: NodeContext) -> list[Value]:
    """signal [B, L, 1|2] -> [B, frames, bins, 2]: frames of frame_length every frame_step,
    times the window, DFT'd (one-sided by default)."""
    b, x = ctx.b, ctx.input(0, "signal")
    float_type_of(ctx, x)
    step = ctx.ints_input(1, "frame_step")
    window = ctx.optional(2)
    length = ctx.ints_input(3, "frame_length") if len(ctx.inputs) > 3 else None
    if step is None:
        raise ctx.fail("needs frame_step")
    if length:
        flen = length[0]
    elif window is not None:
        flen = window.type.shape[0]
    else:
        flen = x.type.shape[-2]
    batch, total, comps = x.type.shape
    frames = 1 + (total - flen) // step[0]
    idx = np.arange(frames)[:, None] * step[0] + np.arange(flen)[None, :]
    framed = take(b, x, b.constant(idx.astype(np.int64)), 1)  # [B, frames, flen, comps]
    if window is not None:
        w = b.op(ops.broadcast_in_dim, [b.convert(window, x.type.dtype)], {
            "shape": framed.type.shape, "broadcast_dimensions": (2,)})
        framed = b.multiply(framed, w)
    onesided = bool(ctx.attr("onesided", 1))
    return [dft(b, framed, 2, flen, False, onesided)]


@converts("MelWeightMatrix")
def convert_mel_weight_matrix(ctx: NodeContext) -> list[Value]:
    """The [dft_length / 2 + 1, num_mel_bins] triangular filter bank (a constant)."""
    bins, dft_len, rate = (int(ctx.const_input(i, w).reshape(-1)[0]) for i, w in
                           enumerate(("num_mel_bins", "dft_length", "sample_rate")))
    low, high = (float(ctx.const_input(i, w).reshape(-1)[0]) for i, w in
                 ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")))
    points = np.arange(0, bins + 2)
    low_mel = 2595 * np.log1p(low / 700) / np.log(10)
    high_mel = 2595 * np.log1p(high / 700) / np.log(10)
    mel = points * ((high_mel - low_mel) / points.shape[0]) + low_mel
    hz = 700 * np.expm1(mel / 2595 * np.log(10))
    edges = (((dft_len + 1) * hz) // rate).astype(int)
    out = np.zeros((dft_len // 2 + 1, bins))
    rows = np.arange(out.shape[0])[:, None]
    left, center, right = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    rise = np.where(center > left, (rows - left) / np.maximum(center - left, 1), 0.0)
    rise = np.where((rows >= left) & (rows <= center) & (center > left), rise, 0.0)
    fall = (right - rows) / np.maximum(right - center, 1)
    fall = np.where((rows >= center) & (rows < right) & (right > center), fall, 0.0)
    out = np.where(fall > 0, fall, rise)
    point = (center == left) & (rows == center)
    out = np.where(point, 1.0, out)
    dtype = to_ir_dtype(int(ctx.attr("output_datatype", 1)), "output_datatype")
    return [ctx.b.constant(out.astype(dtype.numpy))]
