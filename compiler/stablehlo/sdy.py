"""Shardy's `#sdy.sharding<@mesh, [{"dp"}, {}]>` as HLO sharding text, through the module's
`sdy.mesh @mesh = <["dp"=2, "tp"=4]>`: each dimension is split over the product of its
axes; the mesh axes no dimension uses replicate (`last_tile_dim_replicate`); the device
order is the mesh's iota transposed to (the axes of dimension 0, of dimension 1, ..., the
unused axes), written in HLO's iota form (``devices=[1,4,2]<=[2,4]T(1,0)``)."""

from __future__ import annotations

import math
import re

from nxcc.compiler.stablehlo.syntax import HashAttr

_MESH = re.compile(r"\s*@([\w.$\-]+)\s*,\s*\[(.*)\]")
_GROUP = re.compile(r"\{([^{}]*)\}")
_AXIS = re.compile(r'"([^"]+)"')


def sdy_to_hlo_sharding(attr: HashAttr, meshes: dict[str, tuple[tuple[str, int], ...]],
                        rank: int) -> str | None:
    """The HLO sharding text of `attr`, None when it cannot be said in HLO terms (an
    unknown or inline mesh, sub-axes, a rank that does not match)."""
    m = _MESH.match(attr.body)
    if m is None or m.group(1) not in meshes:
        return None
    axes = dict(meshes[m.group(1)])
    order = [name for name, _ in meshes[m.group(1)]]
    groups = _GROUP.findall(m.group(2))
    if len(groups) != rank or any(":" in g for g in groups):
        return None
    dims_axes = [_AXIS.findall(g) for g in groups]
    used = [a for group in dims_axes for a in group]
    if any(a not in axes for a in used):
        return None
    tiles = [math.prod(axes[a] for a in group) for group in dims_axes]
    if all(t == 1 for t in tiles):
        return "{replicated}"
    rest = [a for a in order if a not in used]
    replicated = math.prod(axes[a] for a in rest)
    perm = [order.index(a) for a in used + rest]
    shape = tiles + ([replicated] if replicated > 1 else [])
    mesh_dims = [axes[a] for a in order]
    if perm == sorted(perm):
        devices = f"<=[{math.prod(mesh_dims)}]"
    else:
        devices = f"<=[{','.join(map(str, mesh_dims))}]T({','.join(map(str, perm))})"
    tail = " last_tile_dim_replicate" if replicated > 1 else ""
    return f"{{devices=[{','.join(map(str, shape))}]{devices}{tail}}}"
