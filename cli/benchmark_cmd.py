"""`neuronx-cc benchmark`: load a NEFF, time its executions (`nxcc.Model.benchmark`), print
latency percentiles, throughput, load time and peak memory (as text, or one JSON object with
`--json`)."""

from __future__ import annotations

import json

import click

from nxcc.backend.runtime.api import load
from nxcc.backend.runtime.benchmark import BenchmarkResult
from nxcc.cli.errors import user_errors
from nxcc.cli.run_cmd import load_inputs


def describe(result: BenchmarkResult) -> str:
    """The result as a few lines of text."""
    return "\n".join([
        f"model: {result.name} ({result.neff})",
        f"load time: {result.load_ms:.1f} ms",
        f"executions: {result.iterations} timed after {result.warmup} warm-up",
        f"latency (ms): p50 {result.latency_p50_ms:.3f}  p90 {result.latency_p90_ms:.3f}  "
        f"p99 {result.latency_p99_ms:.3f}  mean {result.latency_mean_ms:.3f}  "
        f"min {result.latency_min_ms:.3f}  max {result.latency_max_ms:.3f}",
        f"throughput: {result.throughput_per_s:.1f} inferences/s",
        f"peak memory: {result.peak_memory_bytes / 2**20:.1f} MiB",
    ])


@click.command("benchmark")
@click.argument("neff", type=click.Path(dir_okay=False))
@click.option("--inputs", "inputs_path", type=click.Path(dir_okay=False),
              help="An .npz keyed by the NEFF's input names; default: random inputs of the "
              "NEFF's input types (seeded).")
@click.option("--warmup", type=click.IntRange(min=0), default=10, show_default=True,
              help="Untimed executions first.")
@click.option("--iterations", type=click.IntRange(min=1),
              help="Timed executions (default 100 unless --duration is given).")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Time executions for this many seconds instead of a fixed count.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@user_errors
def benchmark_cmd(neff: str, inputs_path: str | None, warmup: int, iterations: int | None,
                  duration: float | None, as_json: bool) -> None:
    """Benchmark NEFF on the bundled runtime: latency p50/p90/p99, throughput, load time and
    peak memory (resident-set high-water mark of the process)."""
    if iterations is not None and duration is not None:
        raise click.UsageError("give --iterations or --duration, not both")
    inputs = load_inputs(inputs_path) if inputs_path else None
    with load(neff) as model:
        result = model.benchmark(inputs, warmup=warmup, iterations=iterations,
                                 duration=duration)
    click.echo(json.dumps(result.to_json()) if as_json else describe(result))
