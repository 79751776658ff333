"""The compiler refuses what the runtime would refuse: a program whose arenas (or a tensor,
a weight, the payload) go over `backend.neff.limits` ends in one NCC_ELIM001 line naming
the limit, and no NEFF is written; a program at the limit still compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inprocess import assert_clean_error, run_cli

IOTA = 1 << 28  # f32 elements: exactly MAX_ARENA_BYTES
MLIR = f"""module @m {{
  func.func public @main(%arg0: tensor<f32>) -> ({{RESULTS}}) {{
    %0 = stablehlo.iota dim = 0 : tensor<{IOTA}xf32>
    %1 = stablehlo.add %arg0, %arg0 : tensor<f32>
    return {{RETURNS}}
  }}
}}
"""
HLO = f"""HloModule m

ENTRY main {{
  x = f32[] parameter(0)
  i = f32[{IOTA}] iota(), iota_dimension=0
  s = f32[] add(x, x)
  ROOT t = (f32[{IOTA}], f32[]) tuple(i, s)
}}
"""


def _mlir(both: bool) -> str:
    if both:
        return MLIR.replace("{RESULTS}", f"tensor<{IOTA}xf32>, tensor<f32>").replace(
            "{RETURNS}", f"%0, %1 : tensor<{IOTA}xf32>, tensor<f32>")
    return MLIR.replace("{RESULTS}", f"tensor<{IOTA}xf32>").replace(
        "{RETURNS}", f"%0 : tensor<{IOTA}xf32>")


@pytest.mark.parametrize(("name", "text"), [("over.mlir", _mlir(True)), ("over.hlo", HLO)])
def test_arena_over_the_runtime_limit_refused(tmp_path: Path, name: str, text: str) -> None:
    model = tmp_path / name
    model.write_text(text)
    out = tmp_path / "out.neff"
    line = assert_clean_error(run_cli("compile", str(model), "--target", "trn1", "--output",
                                      str(out), "--no-cache"), "[NCC_ELIM001]",
                              "arena_bytes", "1073741888", "1073741824", "no NEFF written")
    assert "would not load" in line
    assert not out.exists()


def test_at_the_limit_compiles(tmp_path: Path) -> None:
    model = tmp_path / "limit.mlir"
    model.write_text(_mlir(False))
    out = tmp_path / "out.neff"
    result = run_cli("compile", str(model), "--target", "trn1", "--output", str(out),
                     "--no-cache")
    assert result.status == 0, result.stderr
    assert out.exists()
