"""The framework is told from a model file's bytes; a mismatch with --framework is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.driver.detect import (
    HLO_PROTO,
    HLO_TEXT,
    ONNX,
    STABLEHLO,
    UNKNOWN_BINARY,
    UNKNOWN_TEXT,
    detect,
    detect_bytes,
)
from nxcc.driver.errors import CompileError
from nxcc.driver.frontends import choose_framework
from tests.cli_helpers import MODELS

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(("path", "kind"), [
    (MODELS / "mlp_ts17.onnx", ONNX),
    (MODELS / "cnn_dyn18.onnx", ONNX),
    (DATA / "matmul.hlo", HLO_TEXT),
    (DATA / "matmul.hlo.pb", HLO_PROTO),
    (DATA / "matmul.stablehlo.mlir", STABLEHLO),
])
def test_fixture_kinds(path: Path, kind: str) -> None:
    assert detect(str(path)).kind == kind


@pytest.mark.parametrize(("head", "kind"), [
    (b"// a comment\n\nHloModule jit_f, entry_computation_layout={()->f32[]}\n", HLO_TEXT),
    (b"%add {\n}\n\nENTRY %main () -> f32[] {\n}\n", HLO_TEXT),
    (b'module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n', STABLEHLO),
    (b"func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n", STABLEHLO),
    (b"module @mlp {\n  func @main(%x: f32[4]) -> (f32[4]) {\n", UNKNOWN_TEXT),
    (b"PK\x03\x04\x14\x00\x00\x00", UNKNOWN_BINARY),
    (b"\x08\x07\x12\x07pytorch", ONNX),
    (b"\n\x05jit_f\x12\x06main.1", HLO_PROTO),
    (b"\xff\xfe\x00\x01", UNKNOWN_BINARY),
])
def test_sniffed_kinds(head: bytes, kind: str) -> None:
    assert detect_bytes(head) == kind


def test_a_character_cut_by_the_read_is_still_text() -> None:
    head = (b"HloModule m\n// " + "\u00e9".encode() * 40000)[: 1 << 16]
    assert head[-1:] == b"\xc3"
    assert detect_bytes(head) == HLO_TEXT


def test_content_wins_over_extension(tmp_path: Path) -> None:
    misnamed = tmp_path / "model.hlo"
    misnamed.write_bytes((MODELS / "mlp_ts17.onnx").read_bytes())
    assert choose_framework(str(misnamed), None)[0] == "ONNX"


@pytest.mark.parametrize(("path", "framework", "fragment"), [
    (DATA / "matmul.hlo", "ONNX", "looks like XLA HLO text (--framework XLA)"),
    (DATA / "matmul.hlo.pb", "ONNX", "looks like a binary XLA HloModuleProto"),
    (MODELS / "mlp_ts17.onnx", "XLA", "looks like an ONNX ModelProto (--framework ONNX)"),
])
def test_mismatch_says_what_the_file_looks_like(path: Path, framework: str,
                                                fragment: str) -> None:
    with pytest.raises(CompileError) as info:
        choose_framework(str(path), framework)
    assert info.value.code == "NCC_EARG001" and fragment in str(info.value)


def test_binary_data_given_as_xla_is_refused_without_a_codec_message(tmp_path: Path) -> None:
    junk = tmp_path / "weights.bin"
    junk.write_bytes(bytes(range(256)))
    with pytest.raises(CompileError, match="is binary data that is neither") as info:
        choose_framework(str(junk), "XLA")
    assert "codec" not in str(info.value)


@pytest.mark.parametrize("head", [b"\n" * 65536, b" \n" * 32768, b"\n" * 49,
                                  b"// c\n" * 10000 + b"\n" * 10000],
                         ids=["64k-newlines", "blank-lines", "49-newlines", "comments"])
def test_blank_text_is_told_at_once(head: bytes) -> None:
    """(Found by the hlo_pb fuzz kind: 49 newline bytes hung `compile` in a backtracking
    regular expression; 64 KiB of them took minutes.) Blank lines are scanned linearly."""
    import time

    start = time.perf_counter()
    assert detect_bytes(head) == UNKNOWN_TEXT
    assert detect_bytes(head + b"HloModule m\n") == HLO_TEXT
    assert detect_bytes(head + b"  ENTRY e {\n") == HLO_TEXT
    assert detect_bytes(head + b"module @m attributes {x}\n") == STABLEHLO
    assert time.perf_counter() - start < 2.0
