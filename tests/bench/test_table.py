"""bench/table.py end to end on the tiny bundled MLP (a fast run, not a timing test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def test_table_on_the_tiny_mlp(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "table.py"), "mlp",
                           "--duration", "0.05", "--warmup", "1", "--json", str(out)],
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
    assert row["nxcc_iterations"] >= 1 and row["ort_iterations"] >= 1
    assert f"| {row['ratio']:.2f}x |" in lines[3]


def test_table_refuses_an_unknown_model() -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "table.py"), "nosuchmodel"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "ERROR: unknown model 'nosuchmodel': give one of mlp, wide_mlp, squeezenet, resnet50, "
        "densenet121, vgg19, bert_base, gpt2_small or an .onnx path"]
