"""`neuronx-cc benchmark` and `backend.runtime.benchmark`: timing, percentiles, inputs, memory."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from nxcc.backend.runtime.benchmark import (
    benchmark,
    peak_memory_bytes,
    random_inputs,
    summarize,
)
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.status import NrtError
from nxcc.cli.main import cli, main


def test_summarize_percentiles_and_throughput() -> None:
    times = [i / 1000 for i in range(1, 101)]  # 1 ms ... 100 ms
    r = summarize("m.neff", "m", 3, 0.25, times, 1234)
    assert r.iterations == 100 and r.warmup == 3 and r.load_ms == pytest.approx(250)
    assert r.latency_p50_ms == pytest.approx(50.5)
    assert r.latency_p90_ms == pytest.approx(90.1)
    assert r.latency_p99_ms == pytest.approx(99.01)
    assert r.latency_min_ms == pytest.approx(1) and r.latency_max_ms == pytest.approx(100)
    assert r.throughput_per_s == pytest.approx(100 / sum(times))
    assert r.to_json()["peak_memory_bytes"] == 1234


def test_random_inputs_have_the_exact_types() -> None:
    infos = [TensorInfo("a", np.dtype(np.float32), (2, 3)),
             TensorInfo("b", np.dtype(np.int64), (4,)),
             TensorInfo("c", np.dtype(np.bool_), ()),
             TensorInfo("d", np.dtype(ml_dtypes.bfloat16), (5,))]
    got = random_inputs(infos)
    for info in infos:
        assert got[info.name].dtype == info.dtype and got[info.name].shape == info.shape
    assert set(np.unique(got["b"])) <= {0, 1}
    assert np.array_equal(random_inputs(infos)["a"], got["a"])  # seeded


def test_peak_memory_is_in_bytes_and_covers_a_touched_array() -> None:
    arr = np.ones(64 * 2**20, np.uint8)
    assert peak_memory_bytes() >= arr.nbytes


def test_benchmark_counts_iterations_and_orders_percentiles(weights: Path) -> None:
    r = benchmark(str(weights), warmup=2, iterations=7)
    assert r.iterations == 7 and r.warmup == 2 and r.name == "weights"
    assert 0 < r.latency_min_ms <= r.latency_p50_ms <= r.latency_p90_ms <= r.latency_p99_ms
    assert r.latency_p99_ms <= r.latency_max_ms and r.load_ms > 0 and r.throughput_per_s > 0


def test_benchmark_by_duration_runs_for_that_long(weights: Path) -> None:
    r = benchmark(str(weights), warmup=0, duration=0.2)
    assert r.iterations >= 1
    assert r.iterations * r.latency_mean_ms >= 0.2 * 1e3 * 0.5  # timed runs fill the time


def test_benchmark_refuses_wrong_inputs(weights: Path) -> None:
    with pytest.raises(NrtError, match="unknown input"):
        benchmark(str(weights), {"y": np.zeros((1, 512), np.float32)}, iterations=1)


def test_cli_json_is_one_object_with_every_field(weights: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((1, 512), np.float32))
    result = CliRunner().invoke(cli, ["benchmark", str(weights), "--inputs", str(inputs),
                                      "--warmup", "1", "--iterations", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["iterations"] == 5 and data["warmup"] == 1
    for key in ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "throughput_per_s",
                "load_ms", "peak_memory_bytes"):
        assert data[key] > 0, key


def test_cli_text_output(spin: Path) -> None:
    result = CliRunner().invoke(cli, ["benchmark", str(spin), "--iterations", "3"])
    assert result.exit_code == 0, result.output
    assert "latency (ms): p50" in result.output and "executions: 3 timed" in result.output
    assert "peak memory:" in result.output and "load time:" in result.output


@pytest.mark.parametrize("args, fragment", [
    (["--iterations", "2", "--duration", "1"], "--iterations or --duration"),
    (["--inputs", "missing.npz"], "cannot read inputs"),
])
def test_cli_errors_are_one_line(spin: Path, args: list[str], fragment: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["benchmark", str(spin), *args])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ERROR: ") and fragment in err[0], err
