"""HLO's sharding notation on its own: shardings and replica groups in every form (listed,
iota with transposes, meshes) against the devices numpy computes for them, a sharding
written back and read again, the layouts and IR shardings they map to, and each malformed
piece refused with the offset of the mistake."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir.sharding import Sharding
from nxcc.ir.sharding_notation.cursor import PieceError
from nxcc.ir.sharding_notation.hlo_sharding import (
    MAX_DEVICES,
    parse_replica_groups,
    parse_sharding,
)
from nxcc.ir.sharding_notation.tile_layout import (
    format_sharding,
    per_leaf,
    to_ir_sharding,
    to_layout,
)


@st.composite
def iotas(draw) -> tuple[list[int], list[int] | None]:
    """An iota's reshape dims and, maybe, a permutation of them."""
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    perm = draw(st.none() | st.permutations(range(len(dims))))
    return dims, None if perm is None else list(perm)


def iota_text(dims: list[int], perm: list[int] | None) -> str:
    text = f"<=[{','.join(map(str, dims))}]"
    return text if perm is None else text + f"T({','.join(map(str, perm))})"


@settings(max_examples=150, deadline=None)
@given(iota=iotas())
def test_an_iota_tile_assignment_is_numpys_transposed_arange(iota) -> None:
    dims, perm = iota
    n = math.prod(dims)
    want = np.arange(n).reshape(dims)
    if perm is not None:
        want = want.transpose(perm)
    s = parse_sharding(f"{{devices=[{n},1]{iota_text(dims, perm)}}}")
    assert s.kind == "tiled" and s.tile_dims == (n, 1)
    assert s.devices == tuple(int(d) for d in want.reshape(-1))


def test_listed_and_iota_devices_with_replicated_last_dims() -> None:
    s = parse_sharding("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert s.devices == (0, 4, 1, 5, 2, 6, 3, 7) and s.last_tile_dim_replicate
    s = parse_sharding("{devices=[2,1,2]3,2,1,0 last_tile_dims={manual}}")
    assert s.devices == (3, 2, 1, 0) and s.last_tile_dims == ("manual",)


def test_the_other_kinds_tuples_and_the_words_kept_aside() -> None:
    s = parse_sharding('{{replicated}, {maximal device=3}, '
                       '{devices=[2]0,1 metadata={op_name="x"} shard_as 2}}')
    assert [e.kind for e in s.elements] == ["replicated", "maximal", "tiled"]
    assert s.elements[1].device == 3
    assert s.elements[2].metadata == '{op_name="x"}' and s.elements[2].extra == ("shard_as 2",)
    assert parse_sharding("{manual}").kind == "manual"
    assert parse_sharding("{}").kind == "tuple" and parse_sharding("{}").elements == ()


@pytest.mark.parametrize("text", [
    "{replicated}", "{manual}", "{maximal device=5}", "{devices=[2,2]3,1,2,0}",
    "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
    "{devices=[2,2,2]<=[2,2,2]T(2,0,1) last_tile_dims={replicated, manual}}",
    "{{replicated}, {devices=[1,2]1,0}}",
])
def test_written_back_it_reads_the_same(text: str) -> None:
    s = parse_sharding(text)
    assert parse_sharding(format_sharding(s)) == s


@pytest.mark.parametrize(("text", "fragment", "offset"), [
    ("{devices=[2,2]0,1}", "the tile assignment [2, 2] needs 4 devices, found 2", 1),
    ("{devices=[2]<=[2]T(0,0)}", "T(0, 0) is not a permutation of 1 dims", 14),
    (f"{{devices=[{MAX_DEVICES + 1}]<=[{MAX_DEVICES + 1}]}}", "over the limit of 65536", 18),
    ("{last_tile_dim_replicate}", "expected a sharding kind", 0),
    ("{replicated", "'}' to close the sharding", 11),
])
def test_a_malformed_sharding_names_its_mistake_and_where(text: str, fragment: str,
                                                          offset: int) -> None:
    with pytest.raises(PieceError, match=fragment.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")) as raised:
        parse_sharding(text)
    assert raised.value.offset == offset


def test_replica_groups_listed_and_as_iotas() -> None:
    assert parse_replica_groups("{{0,1},{2,3}}").groups == ((0, 1), (2, 3))
    assert parse_replica_groups("{}").groups == ()  # one group of every replica
    assert parse_replica_groups("[2,2]<=[4]").groups == ((0, 1), (2, 3))
    got = parse_replica_groups("[2,2]<=[2,2]T(1,0)")
    assert got.groups == ((0, 2), (1, 3)) and got.form == "iota"
    with pytest.raises(PieceError, match="need 4 devices, the iota has 3"):
        parse_replica_groups("[2,2]<=[3]")


@st.composite
def meshes(draw) -> tuple[list[int], list[int], list[int]]:
    """Mesh axis sizes, a device order, and the axes the groups vary along."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    order = draw(st.permutations(range(math.prod(sizes))))
    axes = draw(st.lists(st.integers(0, len(sizes) - 1), unique=True, max_size=len(sizes)))
    return sizes, list(order), sorted(axes)


@settings(max_examples=150, deadline=None)
@given(mesh=meshes(), quoted=st.booleans())
def test_mesh_groups_vary_along_their_axes(mesh, quoted: bool) -> None:
    sizes, order, axes = mesh
    quote = "'" if quoted else ""  # newer XLA: mesh['a0'=2,...], device_ids=(...) {'a0'}
    names = [f"{quote}a{i}{quote}" for i in range(len(sizes))]
    axis_sizes = ",".join(f"{n}={s}" for n, s in zip(names, sizes, strict=True))
    device_ids = ",".join(map(str, order))
    varying = ",".join(names[a] for a in axes)
    if quoted:
        text = f"mesh[{axis_sizes}], device_ids=({device_ids}) {{{varying}}}"
    else:
        text = f"@mesh<{axis_sizes}> ({device_ids}) {{{varying}}}"
    devices = np.array(order).reshape(sizes)
    rest = [d for d in range(len(sizes)) if d not in axes]
    want = devices.transpose(rest + axes).reshape(-1, math.prod(sizes[a] for a in axes))
    got = parse_replica_groups(text)
    assert got.form == "mesh"
    assert got.groups == tuple(tuple(int(d) for d in row) for row in want)


def test_a_mesh_refuses_an_axis_it_lacks_and_a_short_device_list() -> None:
    with pytest.raises(PieceError, match="expected one of the mesh axes x, y, found 'z'"):
        parse_replica_groups("@mesh<x=2,y=2> {z}")
    with pytest.raises(PieceError, match="the mesh has 4 devices, its device list 3"):
        parse_replica_groups("@mesh<x=2,y=2> (0,1,2) {x}")


def test_layouts_over_ranks() -> None:
    layout, why = to_layout(parse_sharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), 2)
    assert why is None
    assert (layout.tiles, layout.devices, layout.copies) == ((2, 1), tuple(range(8)), 4)
    layout, why = to_layout(parse_sharding("{maximal device=6}"), 3)
    assert layout.owner == 6 and why is None
    assert to_layout(None, 2) == (None, None)
    assert to_layout(parse_sharding("{manual}"), 2) == (
        None, "{manual} does not give each rank a block")
    layout, why = to_layout(parse_sharding("{devices=[2,2]<=[4]}"), 3)
    assert layout is None and why == "{devices=[2,2]0,1,2,3} tiles 2 dimensions, the value has 3"
    layout, why = to_layout(parse_sharding("{devices=[2,1,2]<=[4] last_tile_dims={manual}}"), 2)
    assert layout is None and "has manual subgroups" in why


def test_ir_shardings_keep_one_split_dimension() -> None:
    assert to_ir_sharding(parse_sharding("{devices=[1,4]<=[4]}"), 2) == (
        Sharding.split(2, 1, 4), None)
    assert to_ir_sharding(parse_sharding("{devices=[4,1,2]<=[8] last_tile_dim_replicate}"),
                          2) == (Sharding.split(2, 0, 4), None)
    assert to_ir_sharding(parse_sharding("{replicated}"), 2) == (Sharding.replicated(), None)
    assert to_ir_sharding(parse_sharding("{unknown}"), 2) == (None, None)
    kept, why = to_ir_sharding(parse_sharding("{devices=[2,2]<=[4]}"), 2)
    assert kept == Sharding.replicated() and "a multi-axis mesh" in why
    kept, why = to_ir_sharding(parse_sharding("{maximal device=0}"), 1)
    assert kept == Sharding.replicated() and "not a split of the value" in why


def test_a_tuple_sharding_gives_one_per_leaf() -> None:
    s = parse_sharding("{{replicated}, {{maximal device=1}, {devices=[2]0,1}}}")
    assert [e.kind for e in per_leaf(s, 3)] == ["replicated", "maximal", "tiled"]
    assert per_leaf(parse_sharding("{replicated}"), 2)[1].kind == "replicated"
    assert per_leaf(None, 2) == [None, None]
    with pytest.raises(ValueError, match="3 elements for 2 values"):
        per_leaf(s, 2)
