"""HLO shardings in the IR's two vocabularies.

- `to_layout`: the general layout of a value over the N ranks of an SPMD program
  (`ir.spmd.TileLayout`): every tiled sharding, ``last_tile_dim_replicate`` and
  ``last_tile_dims={replicated,...}`` (their product is the copy count), ``{replicated}``,
  ``{maximal device=k}``. Not expressible: ``{manual}`` and manual subgroups (the program
  itself decides what each rank holds), ``{unknown}`` (no layout): `to_layout` returns None
  and a reason.
- `to_ir_sharding`: an annotation of an unpartitioned program as an `ir.sharding.Sharding`,
  whose mesh has one axis: a sharding that tiles at most one data dimension maps (the
  dimension stays split; the tile count is the annotation's, and the sharding passes split
  that dimension over however many cores they partition for); replicated data (also with
  ``last_tile_dim_replicate``) maps to replicated. Not expressible, so replicated with a
  warning: tiles on several dimensions (a 2-D mesh), ``{maximal}``, ``{manual}``. The device
  order of the tile assignment is not kept (core k takes block k). ``{unknown}`` leaves the
  value free (None).
"""

from __future__ import annotations

import math

from nxcc.ir.sharding import Sharding
from nxcc.ir.sharding_notation.hlo_sharding import Sharding as HloSharding
from nxcc.ir.spmd import TileLayout


def format_sharding(s: HloSharding) -> str:
    """`s` in HLO sharding syntax (explicit device lists)."""
    if s.kind == "tuple":
        return "{" + ", ".join(format_sharding(e) for e in s.elements) + "}"
    if s.kind == "maximal":
        return f"{{maximal device={s.device}}}"
    if s.kind != "tiled":
        return f"{{{s.kind}}}"
    body = (f"devices=[{','.join(map(str, s.tile_dims))}]"
            f"{','.join(map(str, s.devices))}")
    if s.last_tile_dim_replicate:
        body += " last_tile_dim_replicate"
    if s.last_tile_dims:
        body += " last_tile_dims={" + ", ".join(s.last_tile_dims) + "}"
    return "{" + body + "}"


def per_leaf(s: HloSharding | None, count: int) -> list[HloSharding | None]:
    """The sharding of each of `count` array leaves (a tuple sharding gives one per leaf;
    any other applies to every leaf)."""
    if s is None:
        return [None] * count
    if s.kind != "tuple":
        return [s] * count
    flat: list[HloSharding] = []

    def walk(t: HloSharding) -> None:
        if t.kind == "tuple":
            for e in t.elements:
                walk(e)
        else:
            flat.append(t)

    walk(s)
    if len(flat) != count:
        raise ValueError(f"the tuple sharding has {len(flat)} elements for {count} values")
    return list(flat)


def _data_tiles(s: HloSharding) -> tuple[tuple[int, ...], int, str | None]:
    """(tiles per data dimension, copies, why not expressible) of a tiled sharding."""
    dims = s.tile_dims
    if s.last_tile_dim_replicate:
        return dims[:-1], dims[-1], None
    if s.last_tile_dims:
        k = len(s.last_tile_dims)
        if any(t != "replicated" for t in s.last_tile_dims):
            return dims[:-k], math.prod(dims[-k:]), \
                f"its last_tile_dims={{{', '.join(s.last_tile_dims)}}} has manual subgroups"
        return dims[:-k], math.prod(dims[-k:]), None
    return dims, 1, None


def to_layout(s: HloSharding | None, rank: int, text: str | None = None
              ) -> tuple[TileLayout | None, str | None]:
    """(layout, None), or (None, why) when `s` says nothing expressible (None: unannotated)."""
    if s is None:
        return None, None
    text = text or format_sharding(s)
    if s.kind == "replicated":
        return TileLayout(text=text), None
    if s.kind == "maximal":
        return TileLayout(owner=s.device, text=text), None
    if s.kind != "tiled":
        return None, f"{text} does not give each rank a block"
    tiles, _copies, why = _data_tiles(s)
    if why:
        return None, f"{text}: {why}"
    if len(tiles) != rank:
        return None, f"{text} tiles {len(tiles)} dimensions, the value has {rank}"
    return TileLayout.tiled(tiles, s.devices, text), None


def to_ir_sharding(s: HloSharding | None, rank: int, text: str | None = None
                   ) -> tuple[Sharding | None, str | None]:
    """(sharding, None), or (replicated, why it cannot be kept), or (None, None) when free."""
    if s is None or s.kind == "unknown":
        return None, None
    text = text or format_sharding(s)
    if s.kind == "replicated":
        return Sharding.replicated(), None
    if s.kind != "tiled":
        return Sharding.replicated(), f"{text} is not a split of the value over the cores"
    tiles, _copies, why = _data_tiles(s)
    if why:
        return Sharding.replicated(), f"{text}: {why}"
    if len(tiles) != rank:
        return Sharding.replicated(), f"{text} tiles {len(tiles)} dimensions, the value has " \
            f"{rank}"
    split = [d for d, t in enumerate(tiles) if t > 1]
    if not split:
        return Sharding.replicated(), None
    if len(split) > 1:
        return Sharding.replicated(), (f"{text} tiles dimensions {split} (a multi-axis mesh); "
                                       "the cores of a logical core form one axis")
    return Sharding.split(rank, split[0], tiles[split[0]]), None
