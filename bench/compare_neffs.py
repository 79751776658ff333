"""Latency of two NEFFs of one model (e.g. compiled by an older and a newer nxcc) against
onnxruntime, interleaved in one process so that a loaded machine affects all alike.

    python bench/compare_neffs.py MODEL.onnx BEFORE.neff AFTER.neff [--rounds N] [--threads T]
    python bench/compare_neffs.py --make bert_base:2 OUT.onnx      (a 2-layer BERT-base)

Each round times one execution of each side in turn (after one warm-up each); prints the
median milliseconds of each, the ratios to onnxruntime, and the largest output difference
of each NEFF from onnxruntime. `--make NAME:LAYERS` writes a `bench/make_models.py` model
with fewer layers (the same per-layer shapes), to profile without the full model's compile.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def make(spec: str, out: Path) -> None:
    import make_models
    import onnx

    name, _, layers = spec.partition(":")
    make_models.LAYERS = int(layers or make_models.LAYERS)
    onnx.save(make_models.GENERATORS[name](), str(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--make", metavar="NAME:LAYERS")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.make:
        make(args.make, args.paths[0])
        return
    import onnxruntime as ort

    from nxcc.backend.neff import read_neff
    from nxcc.backend.runtime.model import LoadedModel

    model_path, *neffs = args.paths
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    inputs = {i.name: np.random.default_rng(0).integers(0, 100, i.shape).astype(np.int64)
              if "int64" in i.type else
              np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)
              for i in session.get_inputs()}
    ref = session.run(None, inputs)
    sides = {"onnxruntime": lambda: session.run(None, inputs)}
    for path in neffs:
        model = LoadedModel(read_neff(str(path)))
        ours = list(model.execute(inputs).values())
        diff = max(float(np.max(np.abs(o - r))) for o, r in zip(ours, ref, strict=True))
        print(f"{path}: max |diff| from onnxruntime {diff:.2e}")
        sides[str(path)] = (lambda m: lambda: m.execute(inputs))(model)
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    ort_ms = statistics.median(times["onnxruntime"]) * 1e3
    for name, ts in times.items():
        ms = statistics.median(ts) * 1e3
        print(f"{name:40} {ms:9.2f} ms  {ms / ort_ms:5.2f}x onnxruntime")


if __name__ == "__main__":
    main()
