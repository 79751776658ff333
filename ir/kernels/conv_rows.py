"""2-D stride-1 convolutions on whole padded rows, without the im2col transpose.

Pad one image into a flat buffer (C, Hp, Wp) (plus kw - 1 spare elements at the end). For
kernel offset (i, j), the Ho x Wp elements starting at i * Wp + j of each channel are a
matrix X_ij (C rows, a fixed stride apart) whose column y * Wp + x is the input under output
position (y, x) for every x < Wo; the columns x >= Wo are wrap-around garbage, computed
and dropped. So the convolution is a "wide" product out_wide (O, Ho * Wp) from which the
first Wo columns of each row are kept, by one of:

- `ROWS`: copy the kh * kw matrices X_ij into one (C * kh * kw, Ho * Wp) column matrix (each
  copy a run of Ho * Wp contiguous elements, unlike im2col's runs of Wo) and take one
  product with the (O, C * kh * kw) kernel matrix (a bias in the product: one more row of
  ones and one more column of weights, `conv_bias`);
- `SHIFTED`: no copy at all: out_wide = sum over (i, j) of W_ij (O, C) @ X_ij, one product
  per kernel offset (numpy hands BLAS the strided X_ij), accumulated in a second buffer.

The output rows are taken in tiles whose buffers fit in TILE_BYTES (4 MiB), so a large
image never needs its whole column matrix; the padded image and the tile buffers are
scratch shared by the bound function's steps (`scratch_pool`), so a model's convolutions
hold one set between them.

`method(c, o)` picks one by shape (None: keep im2col), from interleaved timings of the
light models' convolutions on a 2-core machine: ROWS for few
input channels (C <= 128: the copy is small against im2col's, whose short runs dominate
there), SHIFTED when the output channels are at most half the input channels (DenseNet's
128 -> 32: the products stay efficient and there is nothing to copy); otherwise im2col,
whose product is Wo / Wp smaller. The choice depends only on the shapes, so a given NEFF
always computes the same bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nxcc.ir.kernels.conv_bias import Bias, kernel_matrix
from nxcc.ir.kernels.scratch_pool import ScratchPool

ROWS = "rows"
SHIFTED = "shifted"


#: kernel offsets (kh * kw) up to which the row route is taken: a window as large as an
#: image (a weight gradient's) would need a product per offset, or a row of columns per
#: offset; im2col is the better route there
MAX_WINDOW = 49


def method(c: int, o: int) -> str | None:
    """How to convolve C input with O output channels (ROWS, SHIFTED or None: im2col)."""
    if 2 * o <= c:
        return SHIFTED
    if c <= 128:
        return ROWS
    return None


#: bytes of tile buffers (columns and products) per tile of output rows
TILE_BYTES = 4 << 20


class Finish(Protocol):
    """How a tile's product reaches the out: ``finish(product, region)`` is a step writing
    out[region] (one image's rows: (n:n+1, :, y0:y1, :)) from `product`, a view shaped as
    out[region]; an elementwise epilogue applied on the way (`fused.prepare_epilogue`).
    On the row route, ``wide=`` is the tile's whole product (1, O, rows, Wp), of which
    `product` is the first Wo columns, which the step may overwrite."""

    def __call__(self, product: np.ndarray, region: tuple[slice, ...], *,
                 wide: np.ndarray | None = None) -> Callable[[], object]:
        ...


def prepare_conv_rows(x: np.ndarray, w: np.ndarray, low: Sequence[int], high: Sequence[int],
                      how: str, out: np.ndarray, weights_fixed: bool,
                      pool: ScratchPool | None = None, finish: Finish | None = None,
                      bias: Bias | None = None) -> Callable[[], None]:
    """out (N, O, Ho, Wo) = the stride-1 convolution of x (N, C, H, W) padded by
    `low`/`high` (>= 0) with w (O, C, kh, kw), all of one float dtype, plus `bias` (O,)
    inside the product when given (ROWS only: the column matrix gains a row of ones,
    `conv_bias`), as a callable on these fixed arrays. The output rows are taken in tiles
    whose column and product buffers fit in TILE_BYTES; those buffers and the padded image
    are scratch from `pool` (shared with the function's other steps), their views made on
    the first call; the kernel matrices are made once (ROWS: w itself when C-contiguous and
    there is no bias; what of the copies may change, with `weights_fixed` false or a bias
    not fixed, is copied again on every call, so they follow its values). `finish`, when
    given, writes each tile's rows of out from the tile's product (an epilogue read while
    the product is in cache) instead of copying them."""
    nb, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    assert how == ROWS or bias is None, "a bias goes into the ROWS product only"
    geometry = _Geometry(c, h, wd, o, kh, kw, low, high, x.dtype.itemsize, how,
                         bias is not None)
    dt = x.dtype
    kernels: list[np.ndarray]
    refresh: Callable[[], None] | None
    if how == ROWS:
        kernel, refresh = kernel_matrix(w, weights_fixed, bias)
        kernels = [kernel]
    else:
        kernels = [np.empty((o, c), dt) for _ in range(kh * kw)]
        sources = [(k, w[:, :, i, j]) for k, (i, j) in
                   zip(kernels, np.ndindex(kh, kw), strict=True)]

        def refresh() -> None:
            for target, source_view in sources:
                np.copyto(target, source_view)

        refresh()
        if weights_fixed:
            refresh = None
    reservation = (pool or ScratchPool()).reserve(geometry.scratch(dt))
    image: list[_Image] = []
    views: list[_TileViews] = []

    def run() -> None:
        if not views:
            arrays = reservation.arrays()
            image.append(_Image(geometry, arrays[0]))
            views.extend(geometry.views(arrays, out, kernels, finish))
        if refresh is not None:
            refresh()
        for n in range(nb):
            image[0].load(x[n])
            for tile in views:
                tile.compute(n)

    return run


class _Geometry:
    """The padded image, the tiles of output rows and the buffers they need."""

    def __init__(self, c: int, h: int, wd: int, o: int, kh: int, kw: int,
                 low: Sequence[int], high: Sequence[int], item: int, how: str,
                 ones: bool = False) -> None:
        self.c, self.h, self.wd, self.o, self.kh, self.kw = c, h, wd, o, kh, kw
        self.low, self.item, self.how = list(low), item, how
        self.ones = int(ones)  # a row of ones under the columns (ROWS with a bias)
        self.hp, self.wp = h + low[0] + high[0], wd + low[1] + high[1]
        self.ho, self.wo = self.hp - kh + 1, self.wp - kw + 1
        per_row = (self.k + o if how == ROWS else 2 * o) * self.wp * item
        self.rows = max(1, min(self.ho, TILE_BYTES // per_row))

    @property
    def k(self) -> int:
        """Rows of the ROWS column matrix: one per input channel and kernel offset, and
        the row of ones."""
        return self.c * self.kh * self.kw + self.ones

    def scratch(self, dtype: np.dtype) -> list[tuple[tuple[int, ...], np.dtype]]:
        """(shape, dtype) of: the flat padded image (plus kw - 1 spare elements: the last
        X_ij's end), the tile's columns (ROWS) or second product (SHIFTED), its product."""
        flat = (self.c * self.hp * self.wp + self.kw - 1,)
        span = self.rows * self.wp
        second = (self.k * span,) if self.how == ROWS else (self.o * span,)
        return [(flat, dtype), (second, dtype), ((self.o * span,), dtype)]

    def views(self, arrays: list[np.ndarray], out: np.ndarray, kernels: list[np.ndarray],
              finish: Finish | None) -> list[_TileViews]:
        flat, second, product = arrays
        return [_TileViews(self, flat, second, product, out, kernels, y0,
                           min(self.rows, self.ho - y0), finish)
                for y0 in range(0, self.ho, self.rows)]


class _Image:
    """The padded image in the flat buffer: its interior and its zero borders."""

    def __init__(self, g: _Geometry, flat: np.ndarray) -> None:
        padded = flat[:g.c * g.hp * g.wp].reshape(g.c, g.hp, g.wp)
        lo_h, lo_w = g.low
        self.inner = padded[:, lo_h:lo_h + g.h, lo_w:lo_w + g.wd]
        self.borders = borders(padded, g.low, g.h, g.wd)

    def load(self, image: np.ndarray) -> None:
        """The padded image from one (C, H, W) image (borders zeroed: the buffer is shared)."""
        for border in self.borders:
            border.fill(0)
        np.copyto(self.inner, image)


def borders(padded: np.ndarray, low: Sequence[int], h: int, wd: int) -> list[np.ndarray]:
    """The non-empty border regions of a padded (C, Hp, Wp) image whose (h, wd) interior
    starts at `low` (rows above and below, then columns left and right of the interior):
    disjoint views, zeroed before each image is copied in (the buffer is shared scratch)."""
    lo_h, lo_w = low
    return [b for b in (padded[:, :lo_h], padded[:, lo_h + h:],
                        padded[:, lo_h:lo_h + h, :lo_w], padded[:, lo_h:lo_h + h, lo_w + wd:])
            if b.size]


class _TileViews:
    """One tile of output rows [y0, y0 + r): its views, and its share of a call."""

    def __init__(self, g: _Geometry, flat: np.ndarray, second: np.ndarray,
                 product: np.ndarray, out: np.ndarray, kernels: list[np.ndarray],
                 y0: int, r: int, finish: Finish | None) -> None:
        c, hp, wp, item = g.c, g.hp, g.wp, g.item
        span = r * wp
        self.wide = product[:g.o * span].reshape(g.o, span)
        crop = self.wide.reshape(g.o, r, wp)[:, :, :g.wo]
        self.finishers: list[Callable[[], object]]
        if finish is None:
            self.finishers = [functools.partial(np.copyto, out[n, :, y0:y0 + r], crop)
                              for n in range(out.shape[0])]
        else:
            self.finishers = [finish(crop[None], (slice(n, n + 1), slice(None),
                                                  slice(y0, y0 + r), slice(None)),
                                     wide=self.wide.reshape(1, g.o, r, wp))
                              for n in range(out.shape[0])]
        start = y0 * wp
        # the last element any X_ij of this tile reads is within flat (see the module doc)
        assert start + (c - 1) * hp * wp + (g.kh - 1) * wp + g.kw - 1 + span <= flat.size
        self.kernels = kernels
        if g.how == ROWS:
            self.matrix = second[:g.k * span].reshape(g.k, span)
            self.columns = self.matrix[:c * g.kh * g.kw].reshape(c, g.kh, g.kw, span)
            self.source = as_strided(flat[start:], (c, g.kh, g.kw, span),
                                     (hp * wp * item, wp * item, item, item), writeable=False)
            self.ones = self.matrix[g.k - 1] if g.ones else None
            self.compute_product = self._rows
        else:
            self.term = second[:g.o * span].reshape(g.o, span)
            self.shifted = [as_strided(flat[start + i * wp + j:], (c, span),
                                       (hp * wp * item, item), writeable=False)
                            for i in range(g.kh) for j in range(g.kw)]
            self.compute_product = self._shifted

    def compute(self, n: int) -> None:
        self.compute_product()
        self.finishers[n]()

    def _rows(self) -> None:
        np.copyto(self.columns, self.source)
        if self.ones is not None:  # the scratch is shared: rewritten on every call
            self.ones.fill(1)
        np.matmul(self.kernels[0], self.matrix, out=self.wide)

    def _shifted(self) -> None:
        np.matmul(self.kernels[0], self.shifted[0], out=self.wide)
        for k, xs in zip(self.kernels[1:], self.shifted[1:], strict=True):
            np.matmul(k, xs, out=self.term)
            np.add(self.wide, self.term, out=self.wide)
