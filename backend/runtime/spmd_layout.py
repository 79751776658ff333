"""Global tensors and the ranks' blocks of them: splitting inputs, assembling outputs.

Layouts are `ir.spmd.TileLayout`s: from the NEFF's manifest (``spmd.inputs[i].layout``), or
parsed from HLO sharding text (`parse_layout`, for ``neuronx-cc run --output-sharding``).

- `split(x, layout, n)`: rank r's block of the global `x` (the whole `x` when replicated or
  when the value lives on one rank, which every rank is then given).
- `assemble(name, layout, arrays)`: the global output from every rank's block, each block
  taken from its first holder. Without a layout the output is taken as replicated: every
  rank must hold the same array, else `OutputsDisagree` says so and how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir.sharding_notation.cursor import PieceError
from nxcc.ir.sharding_notation.hlo_sharding import parse_sharding
from nxcc.ir.sharding_notation.tile_layout import to_layout
from nxcc.ir.spmd import TileLayout


class LayoutError(ValueError):
    """A layout that cannot be read or does not fit the value or the world."""


class OutputsDisagree(ValueError):
    """An output taken as replicated differs between ranks."""


def parse_layout(text: str, rank: int) -> TileLayout:
    """The layout HLO sharding `text` gives a value of `rank` dimensions; LayoutError when
    it cannot be read or gives no block per rank (``{manual}``)."""
    try:
        s = parse_sharding(text)
    except PieceError as exc:
        raise LayoutError(f"{text!r} is not an HLO sharding: {exc.message} (at character "
                          f"{exc.offset})") from None
    layout, why = to_layout(s, rank, text)
    if layout is None:
        raise LayoutError(why or f"{text} says nothing about where the value lies")
    return layout


def split(x: np.ndarray, layout: TileLayout | None, world_size: int) -> list[np.ndarray]:
    """Every rank's block of the global `x` (row-major copies; the same array for ranks that
    hold all of it)."""
    if layout is None or layout.is_replicated:
        return [x] * world_size
    return [np.require(x[layout.block(x.shape, r)], requirements="C")
            for r in range(world_size)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def assemble(name: str, layout: TileLayout | None, arrays: Sequence[np.ndarray]
             ) -> np.ndarray:
    """The global output `name` from `arrays[r]` (rank r's); see the module docstring."""
    if layout is None:
        first = arrays[0]
        for r, a in enumerate(arrays[1:], start=1):
            if not _same(first, a):
                differ = int(np.count_nonzero(first != a)) if a.shape == first.shape else a.size
                raise OutputsDisagree(
                    f"output '{name}' is taken as replicated (the program gives no sharding "
                    f"for it and no --output-sharding was given) but the ranks disagree: rank "
                    f"{r} differs from rank 0 in {differ} of {first.size} elements; give its "
                    "layout with --output-sharding SPEC (HLO sharding syntax, e.g. "
                    "'{devices=[2,1,4]<=[8] last_tile_dim_replicate}')")
        return first
    if layout.owner is not None:
        return arrays[layout.owner]
    if layout.is_replicated:
        return arrays[0]
    local = arrays[0].shape
    whole = np.empty(layout.global_shape(local), arrays[0].dtype)
    for coords, rank in layout.holders().items():
        where = tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, local, strict=True))
        whole[where] = arrays[rank]
    return whole
