"""bench/train_gpt.py end to end on a one-layer GPT (the tool, not a timing test)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO


def test_train_gpt_on_a_tiny_shape(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train_gpt.py"), "1x128x16",
                           "--steps", "1", "--warmup", "0", "--micro-batch", "2", "--vocab",
                           "64", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("| shape (layers x hidden x seq) | tokens/step | nxcc tokens/s")
    record = json.loads((tmp_path / "train_gpt.json").read_text())
    [row] = record["rows"]
    assert row["shape"] == "1x128x16" and row["tokens_per_step"] == 32
    assert row["nxcc_tokens_per_s"] > 0 and row["tp2_tokens_per_s"] > 0
    assert abs(row["tp2_vs_one"] - row["tp2_tokens_per_s"] / row["nxcc_tokens_per_s"]) < 1e-9
    if importlib.util.find_spec("torch") is not None:
        assert abs(row["nxcc_vs_torch"] - row["nxcc_tokens_per_s"] / row["torch_tokens_per_s"]
                   ) < 1e-9
        assert f"| {row['nxcc_vs_torch']:.2f}x |" in lines[3]
    else:
        assert "torch_tokens_per_s" not in row
    assert record["environment"]["blas"]["source"]


@pytest.mark.parametrize("shape", ["4x512", "0x512x256", "4x500x256"])
def test_a_bad_shape_is_one_line(tmp_path: Path, shape: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train_gpt.py"), shape,
                           "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().startswith("ERROR: shape") and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "train_gpt.json").exists()
