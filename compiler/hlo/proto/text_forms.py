"""Proto attribute messages written as HLO text prints them (`window={...}`, `dim_labels=`,
`sharding={...}`, `replica_groups=...`, ...).

The converter gives each attribute of the syntax tree this text as its `raw` form and
takes its typed value from `compiler.hlo.attributes`, the same functions that read HLO
text: a program gives one tree whichever form it comes in. Each function raises
`ProtoFieldError` when the message cannot be written (a value out of range).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nxcc.compiler.hlo.proto.enums import SHARDING_TYPES
from nxcc.compiler.hlo.proto.schema import HloMessage


class ProtoFieldError(ValueError):
    """A field whose value cannot stand for what the schema says it is."""


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote(s: str) -> str:
    """`s` as a C-escaped double-quoted string."""
    out = []
    for c in s:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def ints(values: Iterable[int]) -> str:
    """`{1,0}`."""
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def key_values(entries: Mapping[str, str]) -> str:
    """`{a="x", b={...}}`, keys sorted; a value in braces is written bare (Shardy's)."""
    parts = []
    for key in sorted(entries):
        value = entries[key]
        bare = value.startswith("{") and value.endswith("}")
        parts.append(f"{key}={value if bare else quote(value)}")
    return "{" + ", ".join(parts) + "}"


def window(w: HloMessage) -> str:
    """`{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`,
    each field after size written when it is not its default."""
    dims = list(w.dimensions)

    def xs(values: list[int]) -> str:
        return "x".join(str(v) for v in values)

    fields = [f"size={xs([d.size for d in dims])}"] if dims else []
    stride = [d.stride or 1 for d in dims]
    if any(s != 1 for s in stride):
        fields.append(f"stride={xs(stride)}")
    if any(d.padding_low or d.padding_high for d in dims):
        fields.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
    lhs = [d.base_dilation or 1 for d in dims]
    if any(v != 1 for v in lhs):
        fields.append(f"lhs_dilate={xs(lhs)}")
    rhs = [d.window_dilation or 1 for d in dims]
    if any(v != 1 for v in rhs):
        fields.append(f"rhs_dilate={xs(rhs)}")
    if any(d.window_reversal for d in dims):
        fields.append(f"rhs_reversal={xs([int(d.window_reversal) for d in dims])}")
    return "{" + " ".join(fields) + "}"


def _labels(rank: int, named: dict[int, str], spatial: Iterable[int], what: str) -> str:
    chars = ["?"] * rank
    placed = [*named.items(), *((d, str(i)) for i, d in enumerate(spatial))]
    for dim, label in placed:
        if not 0 <= dim < rank or chars[dim] != "?":
            raise ProtoFieldError(f"the {what} dimension numbers of a convolution do not "
                                  f"name each of its {rank} dimensions once")
        chars[dim] = label
    return "".join(chars)


def dim_labels(d: HloMessage) -> str:
    """`b01f_01io->b01f` of ConvolutionDimensionNumbers."""
    n = len(d.input_spatial_dimensions)
    lhs = _labels(n + 2, {d.input_batch_dimension: "b", d.input_feature_dimension: "f"},
                  d.input_spatial_dimensions, "input")
    rhs = _labels(n + 2, {d.kernel_input_feature_dimension: "i",
                          d.kernel_output_feature_dimension: "o"},
                  d.kernel_spatial_dimensions, "kernel")
    out = _labels(n + 2, {d.output_batch_dimension: "b", d.output_feature_dimension: "f"},
                  d.output_spatial_dimensions, "output")
    return f"{lhs}_{rhs}->{out}"


def slices(dims: Iterable[HloMessage]) -> str:
    """`{[0:2], [1:5:2]}` (the stride written when it is not 1)."""
    parts = []
    for d in dims:
        stride = d.stride or 1
        parts.append(f"[{d.start}:{d.limit}]" if stride == 1
                     else f"[{d.start}:{d.limit}:{stride}]")
    return "{" + ", ".join(parts) + "}"


def padding(config: HloMessage) -> str:
    """`0_0x1_1_0`: low_high, and _interior when some dimension has interior padding."""
    dims = list(config.dimensions)
    interior = any(d.interior_padding for d in dims)
    return "x".join(f"{d.edge_padding_low}_{d.edge_padding_high}"
                    + (f"_{d.interior_padding}" if interior else "") for d in dims)


def _iota(reshape: Iterable[int], perm: Iterable[int]) -> str:
    reshape, perm = list(reshape), list(perm)
    text = "<=[" + ",".join(map(str, reshape)) + "]"
    if perm and perm != list(range(len(perm))):
        text += "T(" + ",".join(map(str, perm)) + ")"
    return text


def sharding(s: HloMessage, depth: int = 0) -> str:
    """OpSharding as `{replicated}`, `{maximal device=0}`, `{devices=[2,1]0,1}` or
    `{devices=[2,4]<=[8] last_tile_dim_replicate}`, tuples as `{{...}, {...}}`."""
    if depth > 64:
        raise ProtoFieldError("a sharding nests tuples more than 64 deep")
    if s.named_sharding:
        raise ProtoFieldError("expected an OpSharding, found a NamedShardingProto (Shardy's "
                              "form), which is not supported")
    kind = SHARDING_TYPES.get(s.type)
    if kind is None:
        raise ProtoFieldError(f"unknown OpSharding type {s.type}")
    if kind == "tuple":
        return "{" + ", ".join(sharding(e, depth + 1) for e in s.tuple_shardings) + "}"
    if kind == "maximal":
        devices = list(s.tile_assignment_devices)
        if len(devices) != 1:
            raise ProtoFieldError(f"a maximal sharding names {len(devices)} devices, not one")
        body = f"maximal device={devices[0]}"
    elif kind == "other":
        dims = ",".join(map(str, s.tile_assignment_dimensions))
        if s.iota_reshape_dims:
            body = f"devices=[{dims}]" + _iota(s.iota_reshape_dims, s.iota_transpose_perm)
        else:
            body = f"devices=[{dims}]" + ",".join(map(str, s.tile_assignment_devices))
        if s.replicate_on_last_tile_dim:
            body += " last_tile_dim_replicate"
        if s.last_tile_dims:
            names = [SHARDING_TYPES.get(t, str(t)) for t in s.last_tile_dims]
            body += " last_tile_dims={" + ", ".join(names) + "}"
    else:
        body = kind
    if s.is_shard_group:
        body += f" shard_{'like' if s.shard_group_type == 1 else 'as'} {s.shard_group_id}"
    return "{" + body + "}"


def replica_groups(instr: HloMessage) -> str:
    """The instruction's replica groups in the form its proto holds them: the list
    `{{0,1},{2,3}}`, the iota `[2,4]<=[8]` or the mesh `mesh['x'=2,'y'=4] {'y'}`."""
    if instr.HasField("mesh_axes_replica_group_list"):
        return _mesh_axes(instr.mesh_axes_replica_group_list)
    for iota in (instr.iota_collective_device_list,
                 instr.collective_device_list.iota_replica_group_list):
        if iota.num_replica_groups or iota.num_devices_per_group:
            return (f"[{iota.num_replica_groups},{iota.num_devices_per_group}]"
                    + _iota(iota.iota_reshape_dims, iota.iota_transpose_perm))
    groups = instr.collective_device_list.replica_groups or instr.replica_groups
    return "{" + ",".join(ints(g.replica_ids) for g in groups) + "}"


def _mesh_axes(m: HloMessage) -> str:
    axes = list(m.mesh.axes)
    text = "mesh[" + ",".join(f"{quote_axis(a.name)}={a.size}" for a in axes) + "]"
    if m.mesh.device_ids:
        text += " device_ids=(" + ",".join(map(str, m.mesh.device_ids)) + ")"
    refs = []
    for ref in m.axes:
        if not 0 <= ref.mesh_axis_index < len(axes):
            raise ProtoFieldError(f"a replica group names mesh axis {ref.mesh_axis_index} of "
                                  f"a mesh of {len(axes)} axes")
        name = quote_axis(axes[ref.mesh_axis_index].name)
        if ref.HasField("sub_axis_info"):
            name += f":({ref.sub_axis_info.pre_size}){ref.sub_axis_info.size}"
        refs.append(name)
    return text + " {" + ",".join(refs) + "}"


def quote_axis(name: str) -> str:
    if "'" in name or not name:
        raise ProtoFieldError(f"a mesh axis name {name!r} cannot be written")
    return f"'{name}'"
