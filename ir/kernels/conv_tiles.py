"""2-D convolutions of one group by im2col, planned once and taken in tiles of output rows.

The kernel's im2col route (`convolution._single_group_conv`) makes its views, its padded
image and its column matrix on every call, and multiplies all output positions at once, so
an epilogue then reads the whole result back from memory. Planned here for fixed arrays:
the padded image (when padded) and each tile's column matrix are scratch of the function
(`scratch_pool`), every view is made on the first call, and the output rows are taken in
tiles whose column and product buffers fit in TILE_BYTES (1 MiB, well inside a core's L2),
each tile's product (O, rows x Wo) written straight into its rows of the out, or through
the epilogue (`conv_rows.Finish`) while it is in cache. A 1x1 window at stride 1 without
padding multiplies the image itself (no copy). Each tile's product is the BLAS call the
kernel makes on those columns, so the values are the kernel's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from nxcc.ir.kernels.common import windows
from nxcc.ir.kernels.conv_bias import Bias, kernel_matrix
from nxcc.ir.kernels.conv_rows import Finish, borders
from nxcc.ir.kernels.scratch_pool import ScratchPool

#: bytes of a tile's column and product buffers
TILE_BYTES = 1 << 20


def multiplies_the_input(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                         low: Sequence[int], high: Sequence[int]) -> bool:
    """The columns of every image can be the image x[n] itself (C, H * W): a 1x1 window at
    stride 1 without padding, on images whose rows lie one after another (any distance
    between channels: a slab of rows of a larger image, `parallel_steps`). No im2col
    copy, so no room for the row of ones a bias in the product needs (`conv_bias`)."""
    h, wd = x.shape[2:]
    item = x.itemsize
    rows_follow = (wd == 1 or x.strides[3] == item) and (h == 1 or x.strides[2] == wd * item)
    return (w.shape[2] == w.shape[3] == 1 and not any(low) and not any(high)
            and tuple(strides) == (1, 1) and rows_follow)


def folds_by_copy(x: np.ndarray, w: np.ndarray) -> bool:
    """A 1x1 convolution that could multiply its input itself (`multiplies_the_input`)
    takes a bias into its product through a copy of its input and a row of ones when its
    input has at most half as many channels as its output: copying C rows costs less than
    the pass over O rows the bias add would make (SqueezeNet's 16 -> 64 channels at
    55 x 55: 118 against 143 us, 1 thread, in cache; 512 -> 1000 at 13 x 13 lost)."""
    return 2 * x.shape[1] <= w.shape[0]


def prepare_conv_tiles(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                       low: Sequence[int], high: Sequence[int], dilation: Sequence[int],
                       out: np.ndarray, weights_fixed: bool, pool: ScratchPool | None,
                       finish: Finish | None, bias: Bias | None = None) -> Callable[[], None]:
    """out (N, O, Ho, Wo) = the convolution of x (N, C, H, W) padded by `low`/`high` (>= 0)
    with w (O, C, kh, kw) at `strides` and kernel `dilation`, all of one float dtype, plus
    `bias` (O,) inside the product when given (the image then copied into columns even
    where it could be them itself, `multiplies_the_input`), as a callable on these fixed
    arrays. The kernel matrix is w
    itself when C-contiguous and there is no bias, else a copy made once; what of it may
    change (`weights_fixed` false, a bias not fixed) is copied again on every call."""
    nb, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    ho, wo = out.shape[2:]
    k = c * kh * kw
    dt = x.dtype
    item = dt.itemsize
    padded = any(low) or any(high)
    direct = bias is None and multiplies_the_input(x, w, strides, low, high)
    ones = int(bias is not None)  # the row of ones under the columns
    per_row = (o + (0 if direct else k + ones)) * wo * item
    rows = max(1, min(ho, TILE_BYTES // per_row))
    kernel, refresh = kernel_matrix(w, weights_fixed, bias)
    hp, wp = h + low[0] + high[0], wd + low[1] + high[1]
    specs: list[tuple[tuple[int, ...], np.dtype]] = [((c, hp, wp), dt)] if padded else []
    if not direct:
        specs.append((((k + ones) * rows * wo,), dt))
    specs.append(((o * rows * wo,), dt))
    reservation = (pool or ScratchPool()).reserve(specs)
    steps: list[Callable[[], object]] = []

    def build() -> None:
        arrays = reservation.arrays()
        image = arrays.pop(0) if padded else None
        product = arrays.pop()
        columns = None if direct else arrays.pop()
        for n in range(nb):
            if image is not None:
                inner = image[:, low[0]:low[0] + h, low[1]:low[1] + wd]
                steps.extend(_zero_borders(image, low, h, wd))
                steps.append(functools.partial(np.copyto, inner, x[n]))
                base = image
            else:
                base = x[n]
            view = windows(base, (1, kh, kw), (1, *strides), (1, *dilation))[:, :ho, :wo, 0]
            cols = view.transpose(0, 3, 4, 1, 2)  # (C, kh, kw, Ho, Wo): no copy yet
            for y0 in range(0, ho, rows):
                r = min(rows, ho - y0)
                steps.extend(_tile(n, y0, r, cols, columns, product, kernel, out, finish,
                                   direct, x, ones))

    def run() -> None:
        if not steps:
            build()
        if refresh is not None:
            refresh()
        for step in steps:
            step()

    return run


def _zero_borders(image: np.ndarray, low: Sequence[int], h: int, wd: int
                  ) -> list[Callable[[], object]]:
    """Zero the padded image's borders (the buffer is shared scratch)."""
    return [functools.partial(b.fill, 0) for b in borders(image, low, h, wd)]


def _tile(n: int, y0: int, r: int, cols: np.ndarray, columns: np.ndarray | None,
          product: np.ndarray, kernel: np.ndarray, out: np.ndarray, finish: Finish | None,
          direct: bool, x: np.ndarray, ones: int) -> list[Callable[[], object]]:
    """The steps of output rows [y0, y0 + r) of image n (`ones`: 1 when the column matrix
    ends with a row of ones, under the kernel matrix's bias column)."""
    o, rows = kernel.shape
    k = rows - ones
    wo = out.shape[3]
    span = r * wo
    if direct:
        matrix = x[n].reshape(k, -1)[:, y0 * wo:y0 * wo + span]
        steps: list[Callable[[], object]] = []
    else:
        assert columns is not None
        matrix = columns[:rows * span].reshape(rows, span)
        target = matrix[:k].reshape(cols.shape[:3] + (r, wo))
        steps = [functools.partial(np.copyto, target, cols[:, :, :, y0:y0 + r])]
        if ones:  # the scratch is shared: rewritten on every call
            steps.append(functools.partial(matrix[k].fill, 1))
    region = (slice(n, n + 1), slice(None), slice(y0, y0 + r), slice(None))
    rows_out = out[n, :, y0:y0 + r]
    into = rows_out.reshape(o, span) if finish is None and _merges(rows_out) else None
    if into is not None:
        steps.append(functools.partial(np.matmul, kernel, matrix, out=into))
        return steps
    tile = product[:o * span].reshape(o, span)
    steps.append(functools.partial(np.matmul, kernel, matrix, out=tile))
    tile4 = tile.reshape(1, o, r, wo)
    steps.append(finish(tile4, region) if finish is not None
                 else functools.partial(np.copyto, out[region], tile4))
    return steps


def _merges(rows: np.ndarray) -> bool:
    """rows (O, r, Wo) reads as an (O, r * Wo) matrix in place (each channel's rows
    contiguous), which BLAS can write."""
    _, r, wo = rows.shape
    item = rows.itemsize
    return rows.strides[2] == item and (r == 1 or rows.strides[1] == wo * item)
