"""Resize (opset 10-19) and Upsample (7-9), separably one axis at a time.

Interpolation along an axis is a fixed, compile-time linear map: each output position o is
sum_j w[o, j] * x[idx[o, j]] over a few taps j (1 for nearest, 2 linear, 4 cubic, more with
antialias). The taps and weights are computed here with numpy, following the ONNX
reference implementation (edge-clamped neighbours, exclude_outside); the graph gets one
gather per tap (with constant indices) and a multiply-add with constant weights.
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, broadcast_along
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value

TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")


def source_coords(mode: str, n_in: int, n_out: int, scale: float,
                  roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The input coordinate each output position maps to. As the ONNX reference, the
    output length in the formulas is the unrounded `scale * n_in`; `roi` (start, end) is
    tf_crop_and_resize's crop box, in units of the input length."""
    y = np.arange(n_out, dtype=np.float64)
    width = scale * n_in
    if mode == "align_corners":
        return np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        if width == 1:
            return np.full(n_out, (hi - lo) * (n_in - 1) / 2 + lo * (n_in - 1))
        return y * (hi - lo) * (n_in - 1) / (width - 1) + lo * (n_in - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if mode == "pytorch_half_pixel":
        return np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / (scale * n_in))
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel


def nearest_taps(x: np.ndarray, rounding: str, n_in: int, scale: float) -> np.ndarray:
    """[n_out, 1] source indices of nearest-neighbour sampling."""
    if rounding == "simple":  # opset < 11 (onnxruntime): floor, or ceil when downsampling
        rounding = "ceil" if scale < 1 else "floor"
    idx = {"round_prefer_floor": np.ceil(x - 0.5), "round_prefer_ceil": np.floor(x + 0.5),
           "floor": np.floor(x), "ceil": np.ceil(x)}[rounding]
    return np.clip(idx, 0, n_in - 1).astype(np.int64)[:, None]


def _cubic_kernel(t: float, a: float) -> float:
    t = abs(t)
    if t <= 1:
        return (a + 2) * t**3 - (a + 3) * t**2 + 1
    return a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a if t < 2 else 0.0


def _coeffs(mode: str, ratio: float, scale: float, antialias: bool, a: float) -> np.ndarray:
    """Tap weights for a source point `ratio` in (0, 1] past its left neighbour; with
    antialias (downsampling) the kernel is stretched by 1 / scale and normalised."""
    if not antialias or scale >= 1:
        if mode == "linear":
            return np.array([1 - ratio, ratio])
        return np.array([_cubic_kernel(t, a) for t in (ratio + 1, ratio, 1 - ratio, 2 - ratio)])
    start = int(math.floor(-(1 if mode == "linear" else 2) / scale) + 1)
    args = scale * (np.arange(start, 2 - start) - ratio)
    if mode == "linear":
        c = np.clip(1 - np.abs(args), 0, 1)
    else:
        c = np.array([_cubic_kernel(t, a) for t in args])
    return c / c.sum()


def interp_taps(x: np.ndarray, mode: str, n_in: int, scale: float, antialias: bool, a: float,
                exclude_outside: bool) -> tuple[np.ndarray, np.ndarray]:
    """([n_out, k] indices, [n_out, k] weights) of linear or cubic interpolation."""
    base = np.floor(x)
    ratio = np.where(x == base, 1.0, x - base)
    coeffs = np.stack([_coeffs(mode, float(r), scale, antialias, a) for r in ratio])
    k = coeffs.shape[1]
    pad = -(-k // 2)
    xp = x + pad
    pp = np.floor(xp)
    frac = xp - pp
    if k % 2 == 0:
        offset = np.where(frac == 0, -(k // 2), -(k // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((k - 1) // 2), -((k - 1) // 2) + 1)
    idx = (pp + offset).astype(np.int64)[:, None] + np.arange(k)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((idx < 0) | (idx >= n_in), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), coeffs


def resample_axis(b: Builder, x: Value, axis: int, idx: np.ndarray, w: np.ndarray | None
                  ) -> Value:
    """sum_j w[:, j] * take(x, idx[:, j], axis) (just the take when `w` is None)."""
    if w is None:
        return take(b, x, b.constant(idx[:, 0]), axis)
    acc = None
    for j in range(idx.shape[1]):
        if not np.any(w[:, j]):
            continue
        part = take(b, x, b.constant(idx[:, j]), axis)
        if not np.all(w[:, j] == 1):
            weight = b.constant(w[:, j].astype(x.type.dtype.numpy))
            part = b.multiply(part, broadcast_along(b, weight, part.type.shape, axis))
        acc = part if acc is None else b.add(acc, part)
    return acc if acc is not None else b.splat(0, x.type.with_shape(
        (*x.type.shape[:axis], idx.shape[0], *x.type.shape[axis + 1:])))


def _plan(ctx: NodeContext, x: Value, scales: list[float] | None, sizes: list[int] | None,
          axes: list[int]) -> tuple[list[float], list[int]]:
    """Per-dim scale and output size (sizes win; keep_aspect_ratio_policy applies)."""
    shape = x.type.shape
    full_scale, full_size = [1.0] * len(shape), list(shape)
    if sizes is not None:
        if len(sizes) != len(axes):
            raise ctx.fail(f"sizes {sizes} must have one entry per axis {axes}")
        for a, s in zip(axes, sizes, strict=True):
            full_size[a], full_scale[a] = s, s / shape[a] if shape[a] else 1.0
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            chosen = [full_scale[a] for a in axes]
            kept = min(chosen) if policy == "not_larger" else max(chosen)
            for a in axes:
                full_scale[a], full_size[a] = kept, int(kept * shape[a] + 0.5)
    elif scales is not None:
        if len(scales) != len(axes):
            raise ctx.fail(f"scales {scales} must have one entry per axis {axes}")
        for a, scale in zip(axes, scales, strict=True):
            if scale <= 0:
                raise ctx.fail(f"scales must be positive, got {scales}")
            full_scale[a], full_size[a] = scale, int(scale * shape[a])
    else:
        raise ctx.fail("needs scales or sizes")
    return full_scale, full_size


def _resize(ctx: NodeContext, x: Value, scales: list[float] | None, sizes: list[int] | None,
            axes: list[int], transform: str, rounding: str,
            roi: list[float] | None = None) -> Value:
    b = ctx.b
    boxes = [(0.0, 1.0)] * x.type.rank
    if transform == "tf_crop_and_resize":
        if roi is None or len(roi) != 2 * len(axes):
            raise ctx.fail(f"tf_crop_and_resize needs a roi of {2 * len(axes)} values, "
                           f"got {roi}")
        for i, axis in enumerate(axes):
            boxes[axis] = (roi[i], roi[i + len(axes)])
    extrapolation = float(ctx.attr("extrapolation_value", 0.0))
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise ctx.unsupported(f"mode '{mode}'")
    if transform not in TRANSFORMS:
        raise ctx.unsupported(f"coordinate_transformation_mode '{transform}'")
    if mode != "nearest" and not x.type.dtype.is_float:
        raise ctx.fail(f"{mode} resize needs a floating-point input, got {x.type}")
    full_scale, full_size = _plan(ctx, x, scales, sizes, axes)
    antialias = bool(ctx.attr("antialias", 0))
    a = float(ctx.attr("cubic_coeff_a", -0.75))
    exclude = bool(ctx.attr("exclude_outside", 0))
    for axis in range(x.type.rank):
        n_in, n_out, scale = x.type.shape[axis], full_size[axis], full_scale[axis]
        if n_out == n_in and math.isclose(scale, 1.0):
            continue
        if n_in == 0:
            raise ctx.fail(f"cannot resize an empty dimension {axis} of {x.type}")
        src = source_coords(transform, n_in, n_out, scale, boxes[axis])
        if mode == "nearest":
            x = resample_axis(b, x, axis, nearest_taps(src, rounding, n_in, scale), None)
        else:
            idx, w = interp_taps(src, mode, n_in, scale, antialias, a, exclude)
            x = resample_axis(b, x, axis, idx, w)
        outside = (src < 0) | (src > n_in - 1)
        if transform == "tf_crop_and_resize" and outside.any():
            mask = broadcast_along(b, b.constant(outside), x.type.shape, axis)
            x = b.select(mask, b.splat(extrapolation, x.type), x)
    return x


def _floats(ctx: NodeContext, i: int, what: str) -> list[float] | None:
    if ctx.optional(i) is None:
        return None
    values = ctx.const_input(i, what).reshape(-1)
    return [float(v) for v in values] if values.size else None


@converts("Resize")
def convert_resize(ctx: NodeContext) -> list[Value]:
    """Resize-10 (X, scales) samples asymmetrically; 11+ (X, roi, scales, sizes) follows
    coordinate_transformation_mode; 18+ adds axes, antialias and keep_aspect_ratio_policy.
    tf_crop_and_resize reads roi and fills what falls outside the input with
    extrapolation_value."""
    x = ctx.input(0)
    if ctx.opset < 11:
        scales = _floats(ctx, 1, "scales")
        return [_resize(ctx, x, scales, None, list(range(x.type.rank)), "asymmetric",
                        "simple")]
    scales, sizes = _floats(ctx, 2, "scales"), None
    if scales is None and ctx.optional(3) is not None:
        sizes = [int(s) for s in ctx.const_input(3, "sizes").reshape(-1)]
    axes_attr = ctx.attr("axes")
    axes = list(range(x.type.rank)) if axes_attr is None else ctx.axes(axes_attr, x.type.rank)
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
    rounding = ctx.attr("nearest_mode", "round_prefer_floor")
    roi = _floats(ctx, 1, "roi") if transform == "tf_crop_and_resize" else None
    return [_resize(ctx, x, scales, sizes, axes, transform, rounding, roi)]


@converts("Upsample")
def convert_upsample(ctx: NodeContext) -> list[Value]:
    """Upsample (opset 7: scales attribute; 9: scales input), as Resize-10."""
    x = ctx.input(0)
    scales = ctx.attr("scales") if ctx.opset < 9 else _floats(ctx, 1, "scales")
    return [_resize(ctx, x, None if scales is None else [float(s) for s in scales], None,
                    list(range(x.type.rank)), "asymmetric", "simple")]
