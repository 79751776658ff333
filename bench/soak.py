"""Load held: the runtime over many executions and many processes (issue 16).

    python bench/soak.py executions [--count 100000] [--warmup 5000]
    python bench/soak.py processes [--procs 8] [--seconds 60]

`executions`: examples/mlp.onnx compiled for trn1, loaded once, executed `--count` times in
this process through `Runtime.execute`; resident memory (VmRSS) is sampled every tenth of
the run after `--warmup` executions, and the run fails if it grew by 1% or more.

`processes`: `--procs` processes start together, each restricted to its own NeuronCore
(NEURON_RT_VISIBLE_CORES=i), and for `--seconds` repeat: init a runtime, load the model,
execute it 100 times checking the outputs against the first result, unload, close. Each
reports its loads, executions and errors; the run fails on any error.

Not a timed test: run by hand; the figures go to bench/results/soak-*.md and .json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.backend.runtime.nrt import Runtime  # noqa: E402
from nxcc.driver.compile import compile_model  # noqa: E402
from nxcc.driver.options import CompileOptions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MODEL = REPO / "examples" / "mlp.onnx"
INPUTS = REPO / "examples" / "mlp_inputs.npz"


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def compiled(directory: str) -> str:
    out = os.path.join(directory, "mlp.neff")
    compile_model(str(MODEL), CompileOptions(target="trn1", output=out), emit=lambda _: None)
    return out


def inputs() -> dict[str, np.ndarray]:
    with np.load(INPUTS) as data:
        return {k: data[k] for k in data.files}


def executions(count: int, warmup: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["NXCC_RUNTIME_DIR"] = os.path.join(tmp, "rt")
        neff, x = compiled(tmp), inputs()
        with Runtime() as rt:
            model = rt.load(neff)
            expected = rt.execute(model, x)
            for _ in range(warmup):
                out = rt.execute(model, x)
            for k, v in expected.items():  # the checks' own imports happen before `base`
                np.testing.assert_array_equal(out[k], v)
            base = rss_bytes()
            start = time.perf_counter()
            samples = []
            step = max(1, count // 10)
            for i in range(1, count + 1):
                out = rt.execute(model, x)
                if i % step == 0:
                    samples.append(rss_bytes())
                    for k, v in expected.items():
                        np.testing.assert_array_equal(out[k], v)
            seconds = time.perf_counter() - start
    growth = (samples[-1] - base) / base * 100
    print(f"{count} executions after {warmup} warm-up in {seconds:.1f} s "
          f"({seconds / count * 1e6:.0f} us each); RSS {base / 2**20:.1f} MiB after warm-up, "
          f"samples {' '.join(f'{s / 2**20:.1f}' for s in samples)} MiB; "
          f"growth {growth:+.2f}%, max {max(samples) / 2**20:.1f} MiB")
    return 0 if growth < 1.0 else 1


def _worker(core: int, neff: str, rt_dir: str, seconds: float, start_at: float,
            results: multiprocessing.Queue) -> None:
    os.environ.update(NXCC_RUNTIME_DIR=rt_dir, NEURON_RT_VISIBLE_CORES=str(core))
    x = inputs()
    loads = execs = errors = 0
    first: dict[str, np.ndarray] | None = None
    message = ""
    while time.time() < start_at:
        time.sleep(0.01)
    end = time.time() + seconds
    while time.time() < end:
        try:
            with Runtime() as rt:
                model = rt.load(neff)
                loads += 1
                for _ in range(100):
                    out = rt.execute(model, x)
                    execs += 1
                    if first is None:
                        first = out
                    for k, v in first.items():
                        np.testing.assert_array_equal(out[k], v)
                rt.unload(model)
        except Exception as exc:  # counted and reported, the run goes on
            errors += 1
            message = f"{type(exc).__name__}: {exc}"
    results.put((core, loads, execs, errors, message, rss_bytes()))


def processes(procs: int, seconds: float) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        neff = compiled(tmp)
        rt_dir = os.path.join(tmp, "rt")
        ctx = multiprocessing.get_context("spawn")
        results: multiprocessing.Queue = ctx.Queue()
        start_at = time.time() + 3.0  # all start together once spawned
        workers = [ctx.Process(target=_worker, args=(i, neff, rt_dir, seconds, start_at,
                                                      results)) for i in range(procs)]
        for w in workers:
            w.start()
        rows = sorted(results.get(timeout=seconds + 120) for _ in workers)
        for w in workers:
            w.join()
    total_errors = 0
    for core, loads, execs, errors, message, rss in rows:
        total_errors += errors
        print(f"core {core}: {loads} loads, {execs} executions, {errors} errors, "
              f"RSS {rss / 2**20:.0f} MiB {message}")
    print(f"{procs} processes x {seconds:.0f} s: {sum(r[1] for r in rows)} loads, "
          f"{sum(r[2] for r in rows)} executions, {total_errors} errors; exit codes "
          f"{[w.exitcode for w in workers]}")
    return 0 if total_errors == 0 and all(w.exitcode == 0 for w in workers) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    e = sub.add_parser("executions")
    e.add_argument("--count", type=int, default=100_000)
    e.add_argument("--warmup", type=int, default=5_000)
    p = sub.add_parser("processes")
    p.add_argument("--procs", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60.0)
    for command in (e, p):
        add_results_argument(command)
    args = parser.parse_args()
    title = {"executions": "One model executed many times in one process",
             "processes": "Processes loading and executing on their own cores"}[args.what]
    with recording(f"soak-{args.what}", title, args.results) as rec:
        if args.what == "executions":
            status = executions(args.count, args.warmup)
        else:
            status = processes(args.procs, args.seconds)
        rec.data["status"] = status
    return status


if __name__ == "__main__":
    sys.exit(main())
