"""metrics.jsonl: one flushed JSON object per logged step, and the console line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from nxcc.driver.train.metrics import MetricsWriter, format_line, read_metrics, should_log


def test_one_object_per_line_flushed(tmp_path: Path) -> None:
    with MetricsWriter(str(tmp_path)) as w:
        w.log(1, np.float32(5.5), 1e-3, 2.0, 1234.5, peak_activation_bytes=4096)
        # flushed: readable before the writer closes
        first = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
        assert first == {"step": 1, "loss": 5.5, "lr": 1e-3, "grad_norm": 2.0,
                         "tokens_per_s": 1234.5, "peak_activation_bytes": 4096}
        w.log(2, float("nan"), 1e-3, float("inf"), 10.0)
    records = read_metrics(str(tmp_path / "metrics.jsonl"))
    assert records[1]["loss"] is None and records[1]["grad_norm"] is None


def test_resume_drops_steps_after_the_checkpoint(tmp_path: Path) -> None:
    with MetricsWriter(str(tmp_path)) as w:
        for step in range(1, 8):
            w.log(step, 10.0 - step, 1e-3, 1.0, 100.0)
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 8, "loss": 1.')  # a line cut short by a kill
    with MetricsWriter(str(tmp_path), resume_step=5) as w:
        w.log(6, 4.0, 1e-3, 1.0, 100.0)
    steps = [r["step"] for r in read_metrics(str(tmp_path / "metrics.jsonl"))]
    assert steps == [1, 2, 3, 4, 5, 6]


def test_console_line_and_cadence() -> None:
    line = format_line({"step": 3, "loss": 5.43214, "lr": 0.0015, "grad_norm": 2.345,
                        "tokens_per_s": 12345.6}, max_steps=20)
    assert line == "step 3/20  loss 5.4321  lr 1.500e-03  grad_norm 2.3450  tokens/s 12346"
    assert "loss nan" in format_line({"step": 1, "loss": None, "lr": 1.0, "grad_norm": 1.0,
                                      "tokens_per_s": 1.0})
    assert [s for s in range(1, 21) if should_log(s, 5, 20)] == [5, 10, 15, 20]
    assert [s for s in range(1, 8) if should_log(s, 5, 7)] == [5, 7]
