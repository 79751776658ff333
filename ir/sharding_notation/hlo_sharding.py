"""Device-placement attribute values: `sharding={...}` and `replica_groups=...`.

Shardings (XLA's HloSharding text): ``{replicated}``, ``{manual}``, ``{unknown}``,
``{maximal device=0}``, ``{devices=[2,1]0,1}``, ``{devices=[4,1,2]<=[2,4]T(1,0)
last_tile_dim_replicate}``, ``last_tile_dims={manual}``, tuple shardings ``{{...}, {...}}``,
and ``metadata={...}`` / ``shard_as N`` / ``shard_like N`` inside. Replica groups: the list
form ``{{0,1},{2,3}}``, the iota form ``[2,2]<=[4]`` or ``[2,2]<=[2,2]T(1,0)``, and the mesh
form ``@mesh<x=2,y=2> {x}`` (sub-axes ``x:(1)2``, explicit device order ``(...)``), also as
newer XLA prints it, ``mesh['x'=2,'y'=2] {'x'}`` (quoted axis names in square brackets).
Both expand to explicit device lists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nxcc.ir.sharding_notation.cursor import Cursor, PieceError


@dataclass(frozen=True)
class Sharding:
    """One sharding. `kind` is replicated, manual, unknown, maximal, tiled or tuple.

    For tiled: `tile_dims` (the tile assignment's shape) and `devices` (its devices in
    row-major order); `last_tile_dim_replicate` / `last_tile_dims` as written. For maximal:
    `device`. For tuple: `elements`. `extra` keeps words the compiler does not interpret.
    """

    kind: str
    device: int | None = None
    tile_dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_tile_dim_replicate: bool = False
    last_tile_dims: tuple[str, ...] = ()
    elements: tuple[Sharding, ...] = ()
    metadata: str = ""
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplicaGroups:
    """Replica groups expanded to explicit device lists; `form` is list, iota or mesh.
    An empty `groups` means one group of every replica (as ``{}`` does in HLO)."""

    groups: tuple[tuple[int, ...], ...]
    form: str = "list"


MAX_DEVICES = 1 << 16
"""The most devices a tile assignment, replica group list or mesh may span (checked before
anything of that size is allocated)."""


def device_count(dims: tuple[int, ...] | list[int], what: str) -> int:
    """The product of `dims` (ValueError if a dim is negative or the product is over
    MAX_DEVICES)."""
    if any(d < 0 for d in dims):
        raise ValueError(f"{what} {list(dims)} has a negative dimension")
    n = math.prod(dims)
    if n > MAX_DEVICES:
        raise ValueError(f"{what} {list(dims)} spans {n} devices, over the limit of "
                         f"{MAX_DEVICES}")
    return n


def iota_devices(reshape: tuple[int, ...], perm: tuple[int, ...] | None) -> np.ndarray:
    """XLA's iota tile assignment: iota over `reshape`, transposed by `perm`, flattened
    (ValueError past MAX_DEVICES or for a `perm` that is not a permutation)."""
    n = device_count(reshape, "the iota")
    arr = np.arange(n, dtype=np.int64).reshape(reshape)
    if perm is not None:
        if sorted(perm) != list(range(len(reshape))):
            raise ValueError(f"T{tuple(perm)} is not a permutation of {len(reshape)} dims")
        arr = arr.transpose(perm)
    return arr.reshape(-1)


def _iota_tail(cur: Cursor) -> np.ndarray:
    """`[reshape]` optionally followed by `T(perm)`, after '<='."""
    at = cur.pos
    reshape = cur.ints("[", "]", "the iota reshape dims")
    perm = None
    if cur.peek("T("):
        cur.pos += 1
        perm = cur.ints("(", ")", "the iota transpose")
    try:
        return iota_devices(reshape, perm)
    except ValueError as exc:
        raise PieceError(str(exc), at) from None


def parse_sharding(text: str) -> Sharding:
    cur = Cursor(text)
    s = _sharding(cur)
    cur.finish("the sharding")
    return s


def _sharding(cur: Cursor) -> Sharding:
    """A sharding in braces: a tuple of shardings, or keywords that describe one."""
    cur.expect("{", "'{' to start a sharding")
    if cur.peek("{"):
        return _tuple_sharding(cur)
    if cur.eat("}"):
        return Sharding("tuple")
    return _sharding_keywords(cur)


def _tuple_sharding(cur: Cursor) -> Sharding:
    """The element shardings of a tuple sharding up to its '}', after the '{'."""
    elements = [_sharding(cur)]
    while cur.eat(","):
        elements.append(_sharding(cur))
    cur.expect("}", "',' or '}' after a tuple element sharding")
    return Sharding("tuple", elements=tuple(elements))


def _sharding_keywords(cur: Cursor) -> Sharding:
    """The keywords of one (non-tuple) sharding up to its '}'."""
    kind, device, metadata, extra = "", None, "", []
    tile_dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_dims: tuple[str, ...] = ()
    replicate_last = False
    while not cur.eat("}"):
        if cur.at_end():
            raise cur.error("'}' to close the sharding")
        at = cur.pos
        word = cur.word("a sharding keyword (replicated, maximal, devices=...)")
        if word in ("replicated", "manual", "unknown", "unreduced"):
            kind = word
        elif word == "maximal":
            cur.expect("device=", "'device=' after 'maximal'")
            kind, device = "maximal", cur.int_("a device number")
        elif word == "devices":
            kind = "tiled"
            tile_dims, devices = _tile_assignment(cur, at)
        elif word == "last_tile_dim_replicate":
            replicate_last = True
        elif word == "last_tile_dims":
            last_dims = _last_tile_dims(cur)
        elif word == "metadata":
            metadata = _metadata(cur)
        elif word in ("shard_as", "shard_like"):
            extra.append(f"{word} {cur.int_('a shard group id')}")
        else:
            extra.append(word)
    if not kind:
        raise PieceError("expected a sharding kind (replicated, manual, maximal, devices=...)",
                         0)
    return Sharding(kind, device, tile_dims, devices, replicate_last, last_dims, (), metadata,
                    tuple(extra))


def _tile_assignment(cur: Cursor, at: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``=[dims]`` then the devices, listed or as an iota ``<=[...]T(...)``, after
    'devices' (which starts at `at`): the tile dims and the devices in row-major order."""
    cur.expect("=", "'=' after 'devices'")
    tile_dims = cur.ints("[", "]", "the tile assignment dims")
    if cur.eat("<="):
        arr = _iota_tail(cur)
    else:
        values = [cur.int_("a device number")]
        while cur.eat(","):
            values.append(cur.int_("a device number"))
        arr = np.array(values, dtype=np.int64)
    if arr.size != math.prod(tile_dims):
        raise PieceError(f"the tile assignment {list(tile_dims)} needs "
                         f"{math.prod(tile_dims)} devices, found {arr.size}", at)
    return tile_dims, tuple(int(d) for d in arr)


def _last_tile_dims(cur: Cursor) -> tuple[str, ...]:
    """``={type, ...}`` after 'last_tile_dims': the sharding type of each last tile dim."""
    cur.expect("=", "'=' after 'last_tile_dims'")
    cur.expect("{", "'{' to start last_tile_dims")
    names = [cur.word("a sharding type")]
    while cur.eat(","):
        names.append(cur.word("a sharding type"))
    cur.expect("}", "',' or '}' in last_tile_dims")
    return tuple(names)


def _metadata(cur: Cursor) -> str:
    """``={...}`` after 'metadata': the braced text, kept verbatim."""
    cur.expect("=", "'=' after 'metadata'")
    start = cur.pos
    _skip_braces(cur)
    return cur.text[start:cur.pos].strip()


def _skip_braces(cur: Cursor) -> None:
    cur.expect("{", "'{'")
    depth, text, pos = 1, cur.text, cur.pos
    while pos < len(text) and depth:
        c = text[pos]
        if c == '"':
            end = text.find('"', pos + 1)
            while end > 0 and text[end - 1] == "\\":
                end = text.find('"', end + 1)
            if end < 0:
                raise PieceError("expected '\"' to close the string", pos)
            pos = end
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        pos += 1
    if depth:
        raise PieceError("expected '}' to close '{', found the end of the value", pos)
    cur.pos = pos


def parse_replica_groups(text: str) -> ReplicaGroups:
    cur = Cursor(text)
    if cur.peek("@mesh") or cur.peek("mesh["):
        groups = _mesh_groups(cur)
        form = "mesh"
    elif cur.peek("["):
        at = cur.pos
        shape = cur.ints("[", "]", "the replica group list shape")
        if len(shape) != 2:
            raise PieceError(f"expected [groups,group_size], found {list(shape)}", at)
        cur.expect("<=", "'<=' after the replica group list shape")
        arr = _iota_tail(cur)
        if arr.size != shape[0] * shape[1]:
            raise PieceError(f"[{shape[0]},{shape[1]}] replica groups need "
                             f"{shape[0] * shape[1]} devices, the iota has {arr.size}", at)
        groups = tuple(tuple(int(d) for d in row) for row in arr.reshape(shape))
        form = "iota"
    else:
        cur.expect("{", "'{', '[', '@mesh' or 'mesh[' to start replica groups")
        rows: list[tuple[int, ...]] = []
        if not cur.eat("}"):
            while True:
                rows.append(cur.ints("{", "}", "a replica group"))
                if cur.eat("}"):
                    break
                cur.expect(",", "',' or '}' between replica groups")
        groups, form = tuple(rows), "list"
    cur.finish("the replica groups")
    return ReplicaGroups(groups, form)


def _axis_name(cur: Cursor, what: str) -> str:
    """A mesh axis name, bare (``x``) or single-quoted (``'x'``)."""
    cur.ws()
    if cur.text.startswith("'", cur.pos):
        end = cur.text.find("'", cur.pos + 1)
        if end < 0:
            raise cur.error(f"{what} closed by \"'\"")
        name = cur.text[cur.pos + 1:end]
        cur.pos = end + 1
        return name
    return cur.word(what)


def _mesh_groups(cur: Cursor) -> tuple[tuple[int, ...], ...]:
    if cur.eat("mesh["):
        close = "]"
    else:
        cur.expect("@mesh<", "'@mesh<'")
        close = ">"
    names: list[str] = []
    sizes: list[int] = []
    while True:
        names.append(_axis_name(cur, "a mesh axis name"))
        cur.expect("=", "'=' after a mesh axis name")
        sizes.append(cur.int_("a mesh axis size"))
        if cur.eat(close):
            break
        cur.expect(",", f"',' or '{close}' in the mesh")
    try:
        total = device_count(sizes, "the mesh")
    except ValueError as exc:
        raise PieceError(str(exc), 0) from None
    devices = np.arange(total, dtype=np.int64)
    cur.eat(",")  # current XLA: mesh[...], device_ids=(...) {...}
    if cur.eat("device_ids=") or cur.peek("("):
        cur.expect("(", "'(' to start the mesh devices")
        at = cur.pos
        if cur.peek("["):
            devices = _iota_tail(cur)
        else:
            values = [cur.int_("a device number")]
            while cur.eat(","):
                values.append(cur.int_("a device number"))
            devices = np.array(values, dtype=np.int64)
        cur.expect(")", "')' after the mesh devices")
        if devices.size != total:
            raise PieceError(f"the mesh has {total} devices, its device list {devices.size}",
                             at)
    cur.expect("{", "'{' to start the mesh axes of the replica groups")
    axes: list[tuple[int, int | None, int | None]] = []
    if not cur.eat("}"):
        while True:
            at = cur.pos
            name = _axis_name(cur, "a mesh axis name")
            if name not in names:
                raise PieceError(f"expected one of the mesh axes {', '.join(names)}, found "
                                 f"{name!r}", at)
            pre = size = None
            if cur.eat(":"):
                pre = cur.ints("(", ")", "the sub-axis pre-size")[0]
                size = cur.int_("a sub-axis size")
            axes.append((names.index(name), pre, size))
            if cur.eat("}"):
                break
            cur.expect(",", "',' or '}' between mesh axes")
    return mesh_replica_groups(sizes, devices, axes)


def mesh_replica_groups(sizes: list[int], devices: np.ndarray,
                        axes: list[tuple[int, int | None, int | None]]
                        ) -> tuple[tuple[int, ...], ...]:
    """The groups of devices that vary along `axes` (mesh dim, sub-axis pre-size, size),
    as XLA's MeshAxesReplicaGroupList computes them."""
    reshape: list[int] = []
    grouped: list[int] = []
    for dim, full in enumerate(sizes):
        refs = [(pre, size) for d, pre, size in axes if d == dim]
        base = len(reshape)
        if not refs:
            reshape.append(full)
        elif len(refs) == 1 and refs[0][0] is None:
            reshape.append(full)
            grouped.append(base)
        else:
            order = sorted(range(len(refs)), key=lambda i: refs[i][0] or 1)
            local_dims: list[int] = []
            agg_sorted: list[int] = []
            prefix = 1
            for i in order:
                pre, size = refs[i][0] or 1, refs[i][1] or full
                if pre != prefix:
                    local_dims.append(pre // prefix)
                    prefix *= pre // prefix
                agg_sorted.append(len(local_dims))
                local_dims.append(size)
                prefix *= size
            if prefix != full:
                local_dims.append(full // prefix)
            agg = [0] * len(refs)
            for k, i in enumerate(order):
                agg[i] = agg_sorted[k]
            reshape.extend(local_dims)
            grouped.extend(base + a for a in agg)
    per_group = 1
    for d, _pre, axis_size in axes:
        per_group *= axis_size if axis_size is not None else sizes[d]
    rest = [d for d in range(len(reshape)) if d not in grouped]
    arr = devices.reshape(reshape).transpose(rest + grouped).reshape(-1, per_group)
    return tuple(tuple(int(x) for x in row) for row in arr)
