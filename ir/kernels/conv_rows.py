"""2-D stride-1 convolutions on whole padded rows, without the im2col transpose.

Pad one image into a flat buffer (C, Hp, Wp) (plus kw - 1 spare elements at the end). For
kernel offset (i, j), the Ho x Wp elements starting at i * Wp + j of each channel are a
matrix X_ij (C rows, a fixed stride apart) whose column y * Wp + x is the input under output
position (y, x) for every x < Wo; the columns x >= Wo are wrap-around garbage, computed
and dropped. So the convolution is a "wide" product out_wide (O, Ho * Wp) from which the
first Wo columns of each row are kept, by one of:

- `ROWS`: copy the kh * kw matrices X_ij into one (C * kh * kw, Ho * Wp) column matrix (each
  copy a run of Ho * Wp contiguous elements, unlike im2col's runs of Wo) and take one
  product with the (O, C * kh * kw) kernel matrix;
- `SHIFTED`: no copy at all: out_wide = sum over (i, j) of W_ij (O, C) @ X_ij, one product
  per kernel offset (numpy hands BLAS the strided X_ij), accumulated in a second buffer.

`method(c, o)` picks one by shape (None: keep im2col), from interleaved timings of the
light models' convolutions on the 2-core machine (README, "Measured figures"): ROWS for few
input channels (C <= 128: the copy is small against im2col's, whose short runs dominate
there), SHIFTED when the output channels are at most half the input channels (DenseNet's
128 -> 32: the products stay efficient and there is nothing to copy); otherwise im2col,
whose product is Wo / Wp smaller. The choice depends only on the shapes, so a given NEFF
always computes the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

ROWS = "rows"
SHIFTED = "shifted"


def method(c: int, o: int) -> str | None:
    """How to convolve C input with O output channels (ROWS, SHIFTED or None: im2col)."""
    if 2 * o <= c:
        return SHIFTED
    if c <= 128:
        return ROWS
    return None


def conv_rows(x: np.ndarray, w: np.ndarray, low: Sequence[int], high: Sequence[int],
              how: str, out: np.ndarray) -> None:
    """out (N, O, Ho, Wo), contiguous = the stride-1 convolution of x (N, C, H, W) padded
    by `low`/`high` (>= 0) with w (O, C, kh, kw); all of one float dtype."""
    prepare_conv_rows(x, w, low, high, how, out, weights_fixed=True)()


def prepare_conv_rows(x: np.ndarray, w: np.ndarray, low: Sequence[int], high: Sequence[int],
                      how: str, out: np.ndarray, weights_fixed: bool) -> Callable[[], None]:
    """`conv_rows` on these fixed arrays as a callable: the buffers, views and kernel
    matrices made once (fresh buffers per call cost page faults: a third of a small
    convolution's time). With `weights_fixed` false, the kernel matrices are copied from
    w on every call, so they follow its values."""
    nb, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    hp, wp = h + low[0] + high[0], wd + low[1] + high[1]
    ho, wo = hp - kh + 1, wp - kw + 1
    item = x.dtype.itemsize
    flat = np.zeros(c * hp * wp + kw - 1, x.dtype)  # the spare tail: the last X_ij's end
    padded = flat[:c * hp * wp].reshape(c, hp, wp)
    inner = padded[:, low[0]:low[0] + h, low[1]:low[1] + wd]
    wide = np.empty((o, ho * wp), x.dtype)
    crops = [(out[n], wide.reshape(o, ho, wp)[:, :, :wo]) for n in range(nb)]
    if how == ROWS:
        columns = np.empty((c, kh, kw, ho * wp), x.dtype)
        source = as_strided(flat, (c, kh, kw, ho * wp), (hp * wp * item, wp * item, item, item),
                            writeable=False)
        kernel = np.empty((o, c * kh * kw), x.dtype)
        sources = [(kernel.reshape(o, c, kh, kw), w)]
        matrix = columns.reshape(c * kh * kw, ho * wp)

        def product() -> None:
            np.copyto(columns, source)
            np.matmul(kernel, matrix, out=wide)
    else:
        shifted = [as_strided(flat[i * wp + j:], (c, ho * wp), (hp * wp * item, item),
                              writeable=False) for i in range(kh) for j in range(kw)]
        kernels = [np.empty((o, c), x.dtype) for _ in shifted]
        sources = [(k, w[:, :, i, j]) for k, (i, j) in
                   zip(kernels, np.ndindex(kh, kw), strict=True)]
        term = np.empty_like(wide)
        pairs = list(zip(kernels[1:], shifted[1:], strict=True))

        def product() -> None:
            np.matmul(kernels[0], shifted[0], out=wide)
            for k, xs in pairs:
                np.matmul(k, xs, out=term)
                np.add(wide, term, out=wide)

    def refresh() -> None:
        for target, source_view in sources:
            np.copyto(target, source_view)

    refresh()

    def run() -> None:
        if not weights_fixed:
            refresh()
        for n in range(nb):
            np.copyto(inner, x[n])
            product()
            np.copyto(*crops[n])

    return run
