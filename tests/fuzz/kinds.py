"""Every input kind the fuzzer knows: adding one is one entry here."""

from __future__ import annotations

from tests.fuzz import (
    kind_cache,
    kind_checkpoint,
    kind_data,
    kind_hlo,
    kind_hlo_pb,
    kind_neff,
    kind_npz,
    kind_onnx,
    kind_stablehlo,
    kind_state,
    kind_yaml,
)
from tests.fuzz.harness import Kind

KINDS: dict[str, Kind] = {
    "neff": kind_neff.KIND,
    "onnx": kind_onnx.KIND,
    "hlo": kind_hlo.KIND,
    "hlo_pb": kind_hlo_pb.KIND,
    "stablehlo": kind_stablehlo.KIND,
    "npz": kind_npz.KIND,
    "state": kind_state.KIND,
    "cache": kind_cache.KIND,
    "yaml": kind_yaml.KIND,
    "data": kind_data.KIND,
    "checkpoint": kind_checkpoint.KIND,
}
