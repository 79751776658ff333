"""Benchmarking a NEFF on the bundled runtime: load time, latency percentiles, throughput and
the process's peak memory (what `neuronx-cc benchmark` prints).

`benchmark(neff, inputs, warmup=, iterations=, duration=)` times `read_neff`, the init of a
`Runtime` for the NEFF's target and `Runtime.load` (together, the load time), runs `warmup` untimed
executions, then times each execution (`Runtime.execute`, one request in flight) either
`iterations` times or until `duration` seconds have passed (at least once). Latency
percentiles are numpy's linear-interpolation percentiles of the per-execution wall times;
throughput is executions per second of timed wall time. Peak memory is the resident-set
high-water mark of this process (`VmHWM` of /proc/self/status, else `ru_maxrss`), read after
the last execution: it includes the interpreter, numpy and the loaded model.

Without `inputs`, `random_inputs` makes inputs of the NEFF's input types (seeded): floats
standard normal, integers in [0, 2), booleans uniform.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

import numpy as np

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.nrt import Runtime

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class BenchmarkResult:
    """The figures of one benchmark; `to_json` gives them as one flat object."""

    neff: str
    name: str
    warmup: int
    iterations: int
    load_ms: float
    latency_p50_ms: float
    latency_p90_ms: float
    latency_p99_ms: float
    latency_mean_ms: float
    latency_min_ms: float
    latency_max_ms: float
    throughput_per_s: float
    peak_memory_bytes: int

    def to_json(self) -> dict:
        return asdict(self)


def random_inputs(infos: list[TensorInfo], seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of exactly the types `infos` list: floats standard normal, integers in [0, 2)
    (valid as indices into any non-empty axis), booleans uniform."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for info in infos:
        dtype = np.dtype(info.dtype)
        if dtype == np.bool_:
            out[info.name] = rng.integers(0, 2, info.shape).astype(np.bool_)
        elif dtype.kind in "iu":
            out[info.name] = rng.integers(0, 2, info.shape).astype(dtype)
        elif dtype.kind == "c":
            re, im = rng.standard_normal((2, *info.shape))
            out[info.name] = (re + 1j * im).astype(dtype)
        else:  # float32/64, float16, bfloat16 and the narrow ml_dtypes floats
            out[info.name] = rng.standard_normal(info.shape).astype(np.float32).astype(dtype)
    return out


def peak_memory_bytes() -> int:
    """The resident-set high-water mark of this process, in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def summarize(neff: str, name: str, warmup: int, load_s: float, times: list[float],
              peak: int) -> BenchmarkResult:
    """The result for per-execution wall `times` (seconds, at least one)."""
    ms = np.asarray(times, dtype=np.float64) * 1e3
    p50, p90, p99 = (float(v) for v in np.percentile(ms, PERCENTILES))
    total = float(np.sum(times))
    return BenchmarkResult(
        neff=neff, name=name, warmup=warmup, iterations=len(times), load_ms=load_s * 1e3,
        latency_p50_ms=p50, latency_p90_ms=p90, latency_p99_ms=p99,
        latency_mean_ms=float(ms.mean()), latency_min_ms=float(ms.min()),
        latency_max_ms=float(ms.max()),
        throughput_per_s=len(times) / total if total > 0 else float("inf"),
        peak_memory_bytes=peak)


def benchmark(neff: str, inputs: Mapping[str, np.ndarray] | None = None, *, warmup: int = 10,
              iterations: int | None = None, duration: float | None = None,
              config: RuntimeConfig | None = None) -> BenchmarkResult:
    """Load `neff` on a fresh runtime and time its executions (see the module doc).
    Exactly one of `iterations` and `duration` may be given; neither means 100 iterations.
    Raises what loading and executing raise (NeffError, NrtError)."""
    if iterations is not None and duration is not None:
        raise ValueError("give iterations or duration, not both")
    config = config or RuntimeConfig.from_env()
    start = time.perf_counter()
    neff_file = read_neff(neff, validate_hash=config.validate_hash)
    runtime = Runtime(config=config)
    runtime.init(target=neff_file.manifest.get("target"))
    with runtime:
        model = runtime.load(neff_file)
        load_s = time.perf_counter() - start
        feed = dict(inputs) if inputs is not None else random_inputs(model.inputs)
        return measure(lambda: runtime.execute(model, feed), str(neff), model.name, load_s,
                       warmup, iterations, duration)


def measure(run: Callable[[], object], neff: str, name: str, load_s: float, warmup: int,
            iterations: int | None, duration: float | None) -> BenchmarkResult:
    """`warmup` untimed calls of `run`, then timed ones (`iterations`, or for `duration`
    seconds; neither: 100), and the peak memory after them."""
    if iterations is None and duration is None:
        iterations = 100
    for _ in range(warmup):
        run()
    times = timed_runs(run, iterations, duration)
    return summarize(neff, name, warmup, load_s, times, peak_memory_bytes())


def timed_runs(run: Callable[[], object], iterations: int | None, duration: float | None
               ) -> list[float]:
    """Wall time of each call of `run`: `iterations` calls, or calls until `duration` s
    have passed (at least one)."""
    clock = time.perf_counter
    times: list[float] = []
    began = clock()
    while True:
        t0 = clock()
        run()
        t1 = clock()
        times.append(t1 - t0)
        if iterations is not None and len(times) >= iterations:
            return times
        if duration is not None and t1 - began >= duration:
            return times
