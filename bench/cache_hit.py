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
    args = parser.parse_args()
    misses, hits, identical = [], [], True
    for _ in range(args.trials):
        with tempfile.TemporaryDirectory() as work:
            env = {**os.environ, "PYTHONPATH": str(REPO),
                   "NEURON_COMPILE_CACHE_URL": os.path.join(work, "cache")}
            argv = [sys.executable, "-m", "nxcc", "compile", args.model, "--framework",
                    "ONNX", "--target", "trn1", "--output", "model.neff"]
            misses.append(_timed(argv, env, work))
            first = Path(work, "model.neff").read_bytes()
            hits.append(_timed(argv, env, work))
            identical &= Path(work, "model.neff").read_bytes() == first
    miss, hit = statistics.median(misses), statistics.median(hits)
    print(f"{Path(args.model).name}: miss {miss * 1000:.0f} ms, hit {hit * 1000:.0f} ms "
          f"(medians of {args.trials}), {miss / hit:.1f}x; NEFFs byte-identical: {identical}")


if __name__ == "__main__":
    main()
