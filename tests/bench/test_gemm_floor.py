"""bench/gemm_floor.py on the tiny bundled MLP (the recording and the table, not timings)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.paths import REPO

MLP = REPO / "examples" / "mlp.onnx"


def _gemm_floor():
    spec = importlib.util.spec_from_file_location("gemm_floor", REPO / "bench" / "gemm_floor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_mlp_products_are_recorded_with_their_shapes_and_flops(tmp_path: Path) -> None:
    floor = _gemm_floor()
    neff = tmp_path / "mlp.neff"
    compile_model(str(MLP), CompileOptions(target="trn1", output=str(neff)), emit=lambda s: None)
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    matmul, dot = np.matmul, np.dot
    products = floor.record_products(neff, {"x": x})
    assert (np.matmul, np.dot) == (matmul, dot)  # put back
    # Gemm 16 -> 32 and Gemm 32 -> 10 on a batch of 4: 2 * 4 * (16 * 32 + 32 * 10) flops
    assert [(p.a.shape[-2:], p.b.shape[-2:]) for p in products] == [
        ((4, 16), (16, 32)), ((4, 32), (32, 10))]
    assert sum(p.flops for p in products) == 6656
    # replaying a recorded product writes what the recorded call wrote
    first = products[0]
    out = first.args[0] if first.args else first.kwargs["out"]  # bound positionally
    expected = x @ first.b
    out[...] = 0
    first.run()
    np.testing.assert_allclose(out.reshape(expected.shape), expected, rtol=1e-5, atol=1e-6)
    assert floor.time_products(products, rounds=2) > 0


def test_flops_of_batched_and_vector_products() -> None:
    floor = _gemm_floor()
    a, b = np.empty((12, 128, 64), np.float32), np.empty((12, 64, 128), np.float32)
    assert floor.Product(np.matmul, a, b, (), {}).flops == 2 * 12 * 128 * 64 * 128
    assert floor.Product(np.matmul, np.empty((3, 5)), np.empty((1, 5, 7)), (), {}).flops == 210
    assert floor.Product(np.dot, np.empty((3, 5)), np.empty(5), (), {}).flops == 30


def test_the_table_on_the_tiny_mlp(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "gemm_floor.py"), "mlp",
                           "--duration", "0.05", "--warmup", "1", "--rounds", "2",
                           "--processes", "1", "--json", str(out), "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("| model | products | GFLOP | products ms | GFLOP/s")
    [row] = json.loads(out.read_text())
    assert row["products"] == 2 and abs(row["gflop"] - 6.656e-6) < 1e-12
    assert row["products_ms"] > 0 and row["ort_ms"] > 0
    assert abs(row["floor"] - row["products_ms"] / row["ort_ms"]) < 1e-9
    assert lines[3].startswith("| mlp | 2 | ") and lines[3].endswith(f"| {row['floor']:.2f}x |")
    record = json.loads((tmp_path / "gemm_floor.json").read_text())
    assert record["rows"] == [row] and record["environment"]["blas"]["source"]
