"""Compile-cache hit against miss: `python bench/cache_hit.py [MODEL] [--trials N]`.

Each trial compiles MODEL (default: onnx's light ResNet-50) with a fresh, empty cache (a
miss), then runs the same command line again (a hit), each as a new `python -m nxcc`
process, as a build pipeline calls it. Prints the medians, their ratio and whether the two
NEFFs are byte-identical.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx
from result_files import add_results_argument, recording

REPO = Path(__file__).resolve().parent.parent
LIGHT = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def _timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(LIGHT))
    parser.add_argument("--trials", type=int, default=5)
    add_results_argument(parser)
    args = parser.parse_args()
    with recording("cache_hit", "Compile cache: a miss against a hit", args.results) as rec:
        rec.data.update(measure(args.model, args.trials))


def measure(model: str, trials: int) -> dict:
    """Median miss and hit times of `trials` rounds; prints one line."""
    model = str(Path(model).resolve())  # each compile runs in a folder of its own
    misses, hits, identical = [], [], True
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as work:
            env = {**os.environ, "PYTHONPATH": str(REPO),
                   "NEURON_COMPILE_CACHE_URL": os.path.join(work, "cache")}
            argv = [sys.executable, "-m", "nxcc", "compile", model, "--framework",
                    "ONNX", "--target", "trn1", "--output", "model.neff"]
            misses.append(_timed(argv, env, work))
            first = Path(work, "model.neff").read_bytes()
            hits.append(_timed(argv, env, work))
            identical &= Path(work, "model.neff").read_bytes() == first
    miss, hit = statistics.median(misses), statistics.median(hits)
    print(f"{Path(model).name}: miss {miss * 1000:.0f} ms, hit {hit * 1000:.0f} ms "
          f"(medians of {trials}), {miss / hit:.1f}x; NEFFs byte-identical: {identical}")
    return {"model": Path(model).name, "miss_s": miss, "hit_s": hit, "identical": identical}


if __name__ == "__main__":
    main()
