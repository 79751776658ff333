"""bench/table.py end to end on the tiny bundled MLP (a fast run, not a timing test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO


def test_table_on_the_tiny_mlp(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "table.py"), "mlp",
                           "--duration", "0.05", "--warmup", "1", "--processes", "2",
                           "--json", str(out),
                           "--results", str(tmp_path)],  # never over bench/results/
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("| model | compile s | nxcc load ms | ort load ms | nxcc ms")
    assert lines[3].startswith("| mlp | ")
    [row] = json.loads(out.read_text())
    for key in ("compile_s", "nxcc_load_ms", "ort_load_ms", "nxcc_ms", "ort_ms",
                "nxcc_peak_mb", "ort_peak_mb"):
        assert row[key] > 0, key
    assert abs(row["ratio"] - row["nxcc_ms"] / row["ort_ms"]) < 1e-9
    # two alternated processes a side, each latency their median
    assert row["processes"] == 2
    for side in ("nxcc", "ort", "products"):
        each = row[f"{side}_ms_each"]
        assert len(each) == 2 and abs(row[f"{side}_ms"] - sum(each) / 2) < 1e-9, side
    assert row["nxcc_iterations"] >= 1 and row["ort_iterations"] >= 1
    assert f"| {row['ratio']:.2f}x |" in lines[3]
    # the floor: the products alone against onnxruntime, and nxcc against the products
    assert row["products_ms"] > 0
    assert abs(row["floor"] - row["products_ms"] / row["ort_ms"]) < 1e-9
    assert abs(row["nxcc_floor"] - row["nxcc_ms"] / row["products_ms"]) < 1e-9
    assert f"| {row['floor']:.2f}x | {row['nxcc_floor']:.2f}x |" in lines[3]


def test_table_writes_its_result_files(tmp_path: Path) -> None:
    """table.md and table.json: the command, date, machine, versions and BLAS with the
    rows; the measuring processes ran without the OpenBLAS variables the caller set."""
    env = {**os.environ, "OPENBLAS_CORETYPE": "Haswell"}
    done = subprocess.run([sys.executable, str(REPO / "bench" / "table.py"), "mlp",
                           "--duration", "0.05", "--warmup", "1", "--no-floor",
                           "--processes", "1",
                           "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "table.json").read_text())
    assert record["command"].startswith("python bench/table.py mlp ")
    environment = record["environment"]
    assert environment["versions"]["numpy"] and environment["versions"]["nxcc"]
    assert environment["machine"]["cpus"] >= 1 and environment["date"].endswith("+00:00")
    assert environment["caller_blas_variables"]["OPENBLAS_CORETYPE"] == "Haswell"
    assert "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset" in done.stdout.splitlines()[0]
    [row] = record["rows"]
    assert row["model"] == "mlp" and "floor" not in row
    # the BLAS recorded is the one a process without the variables runs
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    clean["OPENBLAS_NUM_THREADS"] = "2"
    seen = subprocess.run([sys.executable, str(REPO / "bench" / "worker.py"), "blas"],
                          capture_output=True, text=True, timeout=120, env=clean)
    assert environment["blas"] == json.loads(seen.stdout)
    markdown = (tmp_path / "table.md").read_text()
    assert markdown.startswith("# nxcc against onnxruntime\n")
    assert "- BLAS: " in markdown and "| mlp | " in markdown


def test_table_refuses_an_unknown_model() -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "table.py"), "nosuchmodel"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "ERROR: unknown model 'nosuchmodel': give one of mlp, wide_mlp, squeezenet, resnet50, "
        "densenet121, vgg19, bert_base, gpt2_small or an .onnx path"]
