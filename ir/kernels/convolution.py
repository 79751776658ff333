"""convolution: HLO convolution (cross-correlation) by im2col and one matmul per group.

The operands are first transposed to the canonical layouts lhs (N, C, *spatial) and
rhs (O, I, *window). lhs_dilation is interior padding with zeros and `padding` is edge
padding (negative crops), both by one `pad_array`. The strided, rhs-dilated windows are a
`sliding_window_view` (no copy); they are gathered into a (G, N*P, I*K) stack of matrices and
multiplied by the (G, I*K, O/G) kernel matrices with one batched matmul. With one group the
product is taken the other way round, (O, I*K) @ (I*K, P) per image, written straight into
the out when its layout is (N, O, *spatial): no result transpose, and a 1x1 window at stride 1
multiplies the input itself (no im2col copy). Padding is skipped when there is none. Depthwise
convolutions (one input feature per group) instead multiply-add one kernel offset at a time.
Plain 2-D stride-1 float convolutions with a window over 1x1 go, by their channel counts, to
`conv_rows` (products on whole padded rows, no im2col transpose) when it is faster
(`prepare_convolution`, which the executor binds once and this kernel runs per call).

Groups follow the StableHLO spec: with batch_group_count B the lhs batch is split into B
contiguous chunks and the kernel output features into B chunks, chunk b convolving with
chunk b; with feature_group_count G the lhs features and the kernel output features are split
into G chunks likewise; results are concatenated along the output features.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels import conv_bias
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, pad_array, store, windows
from nxcc.ir.kernels.conv_bias import Bias
from nxcc.ir.kernels.conv_rows import MAX_WINDOW, ROWS, Finish, method, prepare_conv_rows
from nxcc.ir.kernels.conv_tiles import folds_by_copy, multiplies_the_input, prepare_conv_tiles
from nxcc.ir.kernels.linalg import accumulate_dtype
from nxcc.ir.kernels.plan import Step, plan
from nxcc.ir.kernels.scratch_pool import ScratchPool


def _grouped_conv(x: np.ndarray, w: np.ndarray, groups: int, strides: Sequence[int],
                  rhs_dilation: Sequence[int]) -> np.ndarray:
    """Convolution of padded x (N, G*Ci, *S) with w (G*Og, Ci, *K) -> (N, G*Og, *P), lhs
    feature chunk g convolving with kernel output chunk g; one batched matmul over groups."""
    n = x.ndim - 2
    nb, c = x.shape[:2]
    ci = c // groups
    o = w.shape[0]
    og = o // groups
    ksize = w.shape[2:]
    view = windows(x, (1, 1, *ksize), (1, 1, *strides), (1, 1, *rhs_dilation))
    view = view[(slice(None),) * (2 + n) + (0, 0)]  # (N, C, *P, *K): drop unit windows
    positions = view.shape[2: 2 + n]
    p = math.prod(positions)
    k = math.prod(ksize)
    view = view.reshape(nb, groups, ci, *positions, *ksize)
    # (N, G, Ci, *P, *K) -> (G, N, *P, Ci, *K) -> (G, N*P, Ci*K): the im2col copy
    order = [1, 0, *range(3, 3 + n), 2, *range(3 + n, 3 + 2 * n)]
    cols = view.transpose(order).reshape(groups, nb * p, ci * k)
    kernel_matrix = w.reshape(groups, og, ci * k).transpose(0, 2, 1)  # (G, Ci*K, Og)
    res = np.matmul(cols, kernel_matrix).reshape(groups, nb, *positions, og)
    res = res.transpose(1, 0, n + 2, *range(2, 2 + n))  # (N, G, Og, *P)
    return res.reshape(nb, o, *positions)


def _single_group_conv(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                       rhs_dilation: Sequence[int], out: np.ndarray | None = None
                       ) -> np.ndarray:
    """`_grouped_conv` for one group, as out[n] = W (O, C*K) @ cols[n] (C*K, P): no transposed
    result to copy back, and for a 1x1 window at stride 1 the columns are x itself (no im2col
    copy). `out`, when given, is an (N, O, *P) array of the result dtype to fill, each
    image's (O, *P) contiguous (`_images_contiguous`)."""
    n = x.ndim - 2
    nb, c = x.shape[:2]
    o = w.shape[0]
    ksize = w.shape[2:]
    view = windows(x, (1, 1, *ksize), (1, 1, *strides), (1, 1, *rhs_dilation))
    view = view[(slice(None),) * (2 + n) + (0, 0)]  # (N, C, *P, *K)
    positions = view.shape[2: 2 + n]
    p, k = math.prod(positions), math.prod(ksize)
    order = [0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n)]  # (N, C, *K, *P)
    cols = view.transpose(order).reshape(nb, c * k, p)
    weights = w.reshape(o, c * k)
    if out is not None:
        products = out.view()
        products.shape = (nb, o, p)  # a view, or AttributeError: never a copy written to
        np.matmul(weights, cols, out=products)
        return out
    return np.matmul(weights, cols).reshape(nb, o, *positions)


def _depthwise_conv(x: np.ndarray, w: np.ndarray, groups: int, strides: Sequence[int],
                    rhs_dilation: Sequence[int]) -> np.ndarray:
    """`_grouped_conv` when every group has one input feature (depthwise): a multiply-add
    per kernel offset on broadcast views, with no im2col copy."""
    n = x.ndim - 2
    nb = x.shape[0]
    og = w.shape[0] // groups
    ksize = w.shape[2:]
    view = windows(x, (1, 1, *ksize), (1, 1, *strides), (1, 1, *rhs_dilation))
    view = view[(slice(None),) * (2 + n) + (0, 0)]  # (N, G, *P, *K)
    positions = view.shape[2: 2 + n]
    wk = w.reshape(groups, og, *ksize)
    out = np.zeros((nb, groups, og, *positions), dtype=np.result_type(x, w))
    for offset in np.ndindex(*ksize):
        xk = view[(slice(None),) * (2 + n) + offset][:, :, None]  # (N, G, 1, *P)
        out += xk * wk[(slice(None), slice(None), *offset)].reshape(1, groups, og, *[1] * n)
    return out.reshape(nb, groups * og, *positions)


@kernel(ops.convolution)
def convolution(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """HLO convolution with explicit dimension numbers, groups, padding and dilations."""
    lhs, rhs = args
    out = outs[0]
    a: Mapping = attrs
    rows = prepare_convolution(args, out, attrs, (True, True))
    if rows is not None:
        with np.errstate(all="ignore"):
            rows()
        return
    n = len(a["input_spatial_dims"])
    acc = accumulate_dtype(lhs.dtype, out.dtype)
    if lhs.dtype == np.bool_:
        acc = np.dtype(np.int64)
    x, w = _canonical_operands(lhs, rhs, a)
    x = x.astype(acc, copy=False)
    w = w.astype(acc, copy=False)
    low = [lo for lo, _ in a["padding"]]
    high = [hi for _, hi in a["padding"]]
    interior = [d - 1 for d in a["lhs_dilation"]]
    if any(low) or any(high) or any(interior):
        x = pad_array(x, np.zeros((), acc), [0, 0, *low], [0, 0, *high], [0, 0, *interior])

    canonical = [0] * (n + 2)
    canonical[a["output_batch_dim"]] = 0
    canonical[a["output_feature_dim"]] = 1
    for i, d in enumerate(a["output_spatial_dims"]):
        canonical[d] = 2 + i
    groups, batch_groups = a["feature_group_count"], a["batch_group_count"]
    with np.errstate(all="ignore"):
        if groups == 1 and batch_groups == 1:
            direct = (canonical == list(range(n + 2)) and out.dtype == acc
                      and _images_contiguous(out))
            result = _single_group_conv(x, w, a["window_strides"], a["rhs_dilation"],
                                        out if direct else None)
            if direct:
                return
        else:
            result = _split_conv(x, w, groups, batch_groups, a)
    final = result.transpose(canonical)
    store(out, final != 0 if out.dtype == np.bool_ else final)


def prepare_convolution(args: Sequence[np.ndarray], out: np.ndarray,
                        attrs: Mapping[str, AttrValue], constant: Sequence[bool],
                        pool: ScratchPool | None = None, finish: Finish | None = None,
                        bias: Bias | None = None) -> Callable[[], None] | None:
    """The convolution on these fixed arrays as a callable, with its buffers and kernel
    matrices made once, when it is a 2-D float convolution of one group that needs no
    conversion: on the row route (`conv_rows.prepare_conv_rows`), else by im2col in tiles
    of output rows (`conv_tiles.prepare_conv_tiles`), each handed `finish`; None otherwise
    (the kernel then runs per call). With `bias` (O,), the result is the convolution plus
    the bias added inside the product (`conv_bias`); None also when the sums would be too
    long for it (`conv_bias.MAX_TERMS`) or the route has no column matrix to take it
    (SHIFTED, a 1x1 convolution multiplying its input itself unless a copy pays,
    `conv_tiles.folds_by_copy`)."""
    lhs, rhs = args
    a: Mapping = attrs
    acc = accumulate_dtype(lhs.dtype, out.dtype)
    if not (lhs.dtype == rhs.dtype == out.dtype == acc and _canonical(a)):
        return None
    x, w = _canonical_operands(lhs, rhs, a)
    if bias is not None and math.prod(w.shape[1:]) + 1 > conv_bias.MAX_TERMS:
        return None
    low = [lo for lo, _ in a["padding"]]
    high = [hi for _, hi in a["padding"]]
    how = _rows_method(x, w, a, low, high, [d - 1 for d in a["lhs_dilation"]])
    if how is not None:
        if bias is not None and how != ROWS:
            return None
        return prepare_conv_rows(x, w, low, high, how, out, constant[1], pool, finish, bias)
    if (x.ndim == 4 and x.dtype in NATIVE_FLOATS and a["feature_group_count"] == 1
            and a["batch_group_count"] == 1 and all(d == 1 for d in a["lhs_dilation"])
            and min(*low, *high) >= 0 and x.size > 0 and out.size > 0):
        strides = a["window_strides"]
        if (bias is not None and multiplies_the_input(x, w, strides, low, high)
                and not folds_by_copy(x, w)):
            return None
        return prepare_conv_tiles(x, w, strides, low, high, a["rhs_dilation"], out,
                                  constant[1], pool, finish, bias)
    return None


def _canonical_operands(lhs: np.ndarray, rhs: np.ndarray,
                        a: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """lhs as (N, C, *spatial) and rhs as (O, I, *window): views."""
    x = lhs.transpose([a["input_batch_dim"], a["input_feature_dim"], *a["input_spatial_dims"]])
    w = rhs.transpose([a["kernel_output_feature_dim"], a["kernel_input_feature_dim"],
                       *a["kernel_spatial_dims"]])
    return x, w


def _images_contiguous(out: np.ndarray) -> bool:
    """Each image out[n] is C-contiguous (out may be a slice of a larger buffer along its
    batch or feature dimension: a concatenation's part)."""
    step = out.itemsize
    for size, stride in zip(reversed(out.shape[1:]), reversed(out.strides[1:]), strict=True):
        if size != 1 and stride != step:
            return False
        step *= size
    return True


def _canonical(a: Mapping) -> bool:
    """The out's layout is (N, O, *spatial)."""
    return (a["output_batch_dim"] == 0 and a["output_feature_dim"] == 1
            and list(a["output_spatial_dims"]) == list(range(2, 2 + len(a["output_spatial_dims"]))))


def _rows_method(x: np.ndarray, w: np.ndarray, a: Mapping, low: Sequence[int],
                 high: Sequence[int], interior: Sequence[int]) -> str | None:
    """`conv_rows.method` for a plain 2-D stride-1 float convolution with a window larger
    than 1x1 and at most MAX_WINDOW offsets, no negative padding, and at least one input
    element and output position; None for every other one."""
    plain = (x.ndim == 4 and x.dtype in NATIVE_FLOATS and a["feature_group_count"] == 1
             and a["batch_group_count"] == 1 and not any(interior)
             and all(s == 1 for s in a["window_strides"])
             and all(d == 1 for d in a["rhs_dilation"])
             and min(*low, *high) >= 0 and 1 < w.shape[2] * w.shape[3] <= MAX_WINDOW and x.size > 0
             and all(x.shape[2 + d] + low[d] + high[d] >= w.shape[2 + d] for d in range(2)))
    return method(x.shape[1], w.shape[0]) if plain else None


def _split_conv(x: np.ndarray, w: np.ndarray, groups: int, batch_groups: int,
                a: Mapping) -> np.ndarray:
    """The (N/B, O, *P) result of a grouped or batch-grouped convolution of padded x."""
    nb = x.shape[0] // batch_groups
    ob = w.shape[0] // batch_groups
    conv = _depthwise_conv if x.shape[1] == groups and groups > 1 else _grouped_conv
    parts = [conv(x[b * nb:(b + 1) * nb], w[b * ob:(b + 1) * ob], groups,
                  a["window_strides"], a["rhs_dilation"])
             for b in range(batch_groups)]
    return parts[0] if batch_groups == 1 else np.concatenate(parts, axis=1)  # (N/B, O, *P)


@plan(ops.convolution, dense_constants=True, strided_out=True)
def convolution_plan(args: Sequence[np.ndarray], out: np.ndarray,
                     attrs: Mapping[str, AttrValue], ctx: KernelContext,
                     constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """On the row route: kernel matrices made once, the padded image and tile buffers in the
    function's shared scratch (`prepare_convolution`); else the kernel on these arrays."""
    return (prepare_convolution(args, out, attrs, constant, pool)
            or functools.partial(convolution, list(args), [out], attrs, ctx))
