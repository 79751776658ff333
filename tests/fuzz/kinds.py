"""Every input kind the fuzzer knows: adding one is one entry here."""

from __future__ import annotations

from tests.fuzz import kind_hlo, kind_neff, kind_npz, kind_onnx
from tests.fuzz.harness import Kind

KINDS: dict[str, Kind] = {
    "neff": kind_neff.KIND,
    "onnx": kind_onnx.KIND,
    "hlo": kind_hlo.KIND,
    "npz": kind_npz.KIND,
}
