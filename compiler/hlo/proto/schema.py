"""The part of XLA's HLO schema the compiler reads, declared here and built at import.

The messages are those of ``xla/service/hlo.proto`` (HloModuleProto, HloComputationProto,
HloInstructionProto, ...) and ``xla/xla_data.proto`` (ShapeProto, LiteralProto, OpSharding,
...), with XLA's own field names and numbers, but only the fields the lowering needs: the
protobuf runtime skips every other field of a serialized module. The table below is turned
into a `FileDescriptorProto` in a private descriptor pool (no protoc, no generated code, no
clash with another copy of the schema a process may have loaded), and `message_class(name)`
gives the message class.

HloInstructionProto's `iota_collective_device_list` (92) and `mesh_axes_replica_group_list`
(93) are those of newer XLA (the replica-group oneof JAX 0.10 writes for Shardy-partitioned
programs). OpSharding's `named_sharding` (14, a NamedShardingProto) is kept as bytes only to
refuse it. `HloProto` (an HloModuleProto and its buffer assignment, as XLA's
``--xla_dump_hlo_as_proto`` writes) is declared for its module alone.

Enumerations are declared as int32 (the wire format is the same), so an enum value this
schema does not know stays a number instead of being dropped; their names are in
`compiler.hlo.proto.enums`.

Table syntax, one field a line: ``NAME NUMBER [repeated] TYPE``, TYPE a scalar (int32,
int64, uint32, uint64, bool, float, double, string, bytes), another message of the table,
or ``map<string,string>``. ``A.B`` declares message B nested in A.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeAlias

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "xla"

#: A message of a class `message_class` builds at run time: its fields (XLA's names, as the
#: table below declares them) exist only then, so a type checker sees Any.
HloMessage: TypeAlias = Any

MESSAGES: dict[str, str] = {
    # -- xla/service/hlo.proto ---------------------------------------------------------
    "HloProto": """
        hlo_module                  1  HloModuleProto
    """,
    "HloModuleProto": """
        name                        1  string
        entry_computation_name      2  string
        entry_computation_id        6  int64
        computations                3  repeated HloComputationProto
        host_program_shape          4  ProgramShapeProto
        id                          5  int64
        input_output_alias          8  HloInputOutputAliasProto
        is_dynamic                  11 bool
        spmd_output_sharding        12 OpSharding
        spmd_parameters_shardings   14 repeated OpSharding
        device_assignment           15 DeviceAssignmentProto
        frontend_attributes         19 FrontendAttributes
    """,
    "HloComputationProto": """
        name                        1  string
        instructions                2  repeated HloInstructionProto
        program_shape               4  ProgramShapeProto
        id                          5  int64
        root_id                     6  int64
        is_fusion_computation       7  bool
        execution_thread            8  string
    """,
    "HloInstructionProto": """
        name                        1  string
        opcode                      2  string
        shape                       3  ShapeProto
        literal                     8  LiteralProto
        parameter_number            9  int64
        fusion_kind                 11 string
        tuple_index                 13 int64
        dimensions                  14 repeated int64
        window                      15 Window
        convolution_dimension_numbers 16 ConvolutionDimensionNumbers
        feature_group_count         50 int64
        batch_group_count           58 int64
        slice_dimensions            17 repeated HloInstructionProto.SliceDimensions
        exponent_bits               18 int32
        mantissa_bits               19 int32
        dynamic_slice_sizes         20 repeated int64
        padding_config              21 PaddingConfig
        distribution                23 int32
        channel_id                  26 int64
        custom_call_target          28 string
        dot_dimension_numbers       30 DotDimensionNumbers
        fft_type                    31 int32
        fft_length                  32 repeated int64
        comparison_direction        63 string
        gather_dimension_numbers    33 GatherDimensionNumbers
        gather_slice_sizes          34 repeated int64
        id                          35 int64
        operand_ids                 36 repeated int64
        control_predecessor_ids     37 repeated int64
        called_computation_ids      38 repeated int64
        sharding                    40 OpSharding
        backend_config              43 bytes
        replica_groups              49 repeated ReplicaGroup
        use_global_device_ids       71 bool
        is_host_transfer            47 bool
        is_stable                   60 bool
        scatter_dimension_numbers   48 ScatterDimensionNumbers
        precision_config            51 PrecisionConfig
        source_target_pairs         52 repeated SourceTarget
        constrain_layout            56 bool
        custom_call_has_side_effect 65 bool
        indices_are_sorted          67 bool
        frontend_attributes         68 FrontendAttributes
        unique_indices              69 bool
        rng_algorithm               70 int32
        comparison_type             72 string
        custom_call_api_version     77 int32
        async_execution_thread      79 string
        k                           81 int64
        largest                     85 bool
        collective_device_list      87 CollectiveDeviceListProto
        is_composite                89 bool
        iota_collective_device_list 92 IotaReplicaGroupListProto
        mesh_axes_replica_group_list 93 MeshAxesReplicaGroupListProto
    """,
    "HloInstructionProto.SliceDimensions": """
        start                       1  int64
        limit                       2  int64
        stride                      3  int64
    """,
    "HloInputOutputAliasProto": """
        entries                     1  repeated HloInputOutputAliasProto.AliasEntryProto
    """,
    "HloInputOutputAliasProto.AliasEntryProto": """
        output_shape_index          1  repeated int64
        parameter_number            2  int64
        parameter_shape_index       3  repeated int64
        kind                        4  int32
    """,
    # -- xla/xla_data.proto ------------------------------------------------------------
    "ShapeProto": """
        element_type                2  int32
        dimensions                  3  repeated int64
        is_dynamic_dimension        6  repeated bool
        tuple_shapes                4  repeated ShapeProto
        layout                      5  LayoutProto
    """,
    "LayoutProto": """
        minor_to_major              1  repeated int64
        tiles                       6  repeated TileProto
        element_size_in_bits        7  int64
        memory_space                8  int64
    """,
    "TileProto": """
        dimensions                  1  repeated int64
    """,
    "ProgramShapeProto": """
        parameters                  1  repeated ShapeProto
        result                      2  ShapeProto
        parameter_names             3  repeated string
    """,
    "LiteralProto": """
        shape                       1  ShapeProto
        preds                       2  repeated bool
        s1s                         30 bytes
        s2s                         26 bytes
        s4s                         21 bytes
        s8s                         15 bytes
        u1s                         31 bytes
        u2s                         27 bytes
        u4s                         22 bytes
        u8s                         3  bytes
        s32s                        4  repeated int32
        s64s                        5  repeated int64
        u32s                        6  repeated uint32
        u64s                        7  repeated uint64
        f32s                        8  repeated float
        f64s                        9  repeated double
        c64s                        12 repeated float
        c128s                       18 repeated double
        tuple_literals              10 repeated LiteralProto
        f16s                        11 bytes
        bf16s                       13 bytes
        u16s                        16 bytes
        s16s                        17 bytes
        f4e2m1fns                   32 bytes
        f8e3m4s                     29 bytes
        f8e4m3b11fnuzs              23 bytes
        f8e4m3fns                   20 bytes
        f8e4m3fnuzs                 25 bytes
        f8e4m3s                     28 bytes
        f8e5m2fnuzs                 24 bytes
        f8e5m2s                     19 bytes
        f8e8m0fnus                  33 bytes
    """,
    "WindowDimension": """
        size                        1  int64
        stride                      2  int64
        padding_low                 3  int64
        padding_high                4  int64
        window_dilation             5  int64
        base_dilation               6  int64
        window_reversal             7  bool
    """,
    "Window": """
        dimensions                  1  repeated WindowDimension
    """,
    "GatherDimensionNumbers": """
        offset_dims                 1  repeated int64
        collapsed_slice_dims        2  repeated int64
        start_index_map             3  repeated int64
        index_vector_dim            4  int64
        operand_batching_dims       5  repeated int64
        start_indices_batching_dims 6  repeated int64
    """,
    "ScatterDimensionNumbers": """
        update_window_dims          1  repeated int64
        inserted_window_dims        2  repeated int64
        scatter_dims_to_operand_dims 3 repeated int64
        index_vector_dim            4  int64
        input_batching_dims         5  repeated int64
        scatter_indices_batching_dims 6 repeated int64
    """,
    "ConvolutionDimensionNumbers": """
        input_batch_dimension       7  int64
        input_feature_dimension     8  int64
        input_spatial_dimensions    11 repeated int64
        kernel_input_feature_dimension 3 int64
        kernel_output_feature_dimension 4 int64
        kernel_spatial_dimensions   6  repeated int64
        output_batch_dimension      9  int64
        output_feature_dimension    10 int64
        output_spatial_dimensions   12 repeated int64
    """,
    "DotDimensionNumbers": """
        lhs_contracting_dimensions  1  repeated int64
        rhs_contracting_dimensions  2  repeated int64
        lhs_batch_dimensions        3  repeated int64
        rhs_batch_dimensions        4  repeated int64
    """,
    "PaddingConfig": """
        dimensions                  1  repeated PaddingConfig.PaddingConfigDimension
    """,
    "PaddingConfig.PaddingConfigDimension": """
        edge_padding_low            1  int64
        edge_padding_high           2  int64
        interior_padding            3  int64
    """,
    "PrecisionConfig": """
        operand_precision           1  repeated int32
        algorithm                   2  int32
    """,
    "FrontendAttributes": """
        map                         1  map<string,string>
    """,
    "OpSharding": """
        type                        1  int32
        tile_shape                  2  ShapeProto
        tile_assignment_dimensions  3  repeated int64
        tile_assignment_devices     4  repeated int64
        tuple_shardings             5  repeated OpSharding
        replicate_on_last_tile_dim  6  bool
        last_tile_dims              8  repeated int32
        iota_reshape_dims           9  repeated int64
        iota_transpose_perm         10 repeated int32
        is_shard_group              11 bool
        shard_group_id              12 int64
        shard_group_type            13 int32
        named_sharding              14 bytes
    """,
    "ReplicaGroup": """
        replica_ids                 1  repeated int64
    """,
    "IotaReplicaGroupListProto": """
        num_replica_groups          1  int64
        num_devices_per_group       2  int64
        iota_reshape_dims           3  repeated int64
        iota_transpose_perm         4  repeated int32
    """,
    "CollectiveDeviceListProto": """
        replica_groups              1  repeated ReplicaGroup
        iota_replica_group_list     2  IotaReplicaGroupListProto
    """,
    "MeshAxesReplicaGroupListProto": """
        mesh                        1  MeshProto
        axes                        2  repeated AxisRefProto
    """,
    "MeshProto": """
        axes                        1  repeated MeshProto.MeshAxis
        device_ids                  2  repeated int64
    """,
    "MeshProto.MeshAxis": """
        name                        1  string
        size                        2  int64
    """,
    "AxisRefProto": """
        mesh_axis_index             1  int64
        sub_axis_info               2  AxisRefProto.SubAxis
    """,
    "AxisRefProto.SubAxis": """
        pre_size                    1  int64
        size                        2  int64
    """,
    "SourceTarget": """
        source                      1  int64
        target                      2  int64
    """,
    "DeviceAssignmentProto": """
        replica_count               1  int32
        computation_count           2  int32
    """,
}

_F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64, "bool": _F.TYPE_BOOL, "float": _F.TYPE_FLOAT,
    "double": _F.TYPE_DOUBLE, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
}


def _add_field(msg: descriptor_pb2.DescriptorProto, line: str, owner: str) -> None:
    words = line.split()
    repeated = len(words) == 4 and words[2] == "repeated"
    if len(words) != (4 if repeated else 3):
        raise ValueError(f"{owner}: cannot read the field line {line!r}")
    name, number, kind = words[0], int(words[1]), words[-1]
    field = msg.field.add(name=name, number=number, json_name=_camel(name))
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if kind in SCALARS:
        field.type = SCALARS[kind]
    elif kind == "map<string,string>":
        entry = msg.nested_type.add(name=_camel(name, upper=True) + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        field.label = _F.LABEL_REPEATED
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{PACKAGE}.{owner}.{entry.name}"
    elif kind in MESSAGES:
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{PACKAGE}.{kind}"
    else:
        raise ValueError(f"{owner}.{name}: unknown type {kind!r}")


def _camel(name: str, upper: bool = False) -> str:
    parts = name.split("_")
    head = parts[0].capitalize() if upper else parts[0]
    return head + "".join(p.capitalize() for p in parts[1:])


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The table as one proto3 file of package ``xla``."""
    fdp = descriptor_pb2.FileDescriptorProto(name="nxcc/xla_hlo_subset.proto",
                                             package=PACKAGE, syntax="proto3")
    declared: dict[str, descriptor_pb2.DescriptorProto] = {}
    for full in MESSAGES:  # parents are declared before their nested messages
        parent, _, name = full.rpartition(".")
        container = declared[parent].nested_type if parent else fdp.message_type
        declared[full] = container.add(name=name)
    for full, table in MESSAGES.items():
        for line in table.strip().splitlines():
            _add_field(declared[full], line, full)
    return fdp


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    return pool


def message_class(name: str) -> type[HloMessage]:
    """The message class of `name` (``HloModuleProto``, ``OpSharding``, ...)."""
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{PACKAGE}.{name}"))
