"""Latency of two NEFFs of one model (e.g. compiled by an older and a newer nxcc) against
onnxruntime, interleaved in one process so that a loaded machine affects all alike.

    python bench/compare_neffs.py MODEL.onnx BEFORE.neff AFTER.neff [--rounds N] [--threads T]
    python bench/compare_neffs.py --make bert_base:2 OUT.onnx      (a 2-layer BERT-base)
    python bench/compare_neffs.py --steps MODEL.onnx A.neff B.neff   (per-step profile)

Each round times one execution of each side in turn (after one warm-up each); prints the
median milliseconds of each, the ratios to onnxruntime, and the largest output difference
of each NEFF from onnxruntime. `--make NAME:LAYERS` writes a `bench/make_models.py` model
with fewer layers (the same per-layer shapes), to profile without the full model's compile.
`--steps` runs each NEFF's bound instructions one by one instead, interleaved, and prints
its instruction count and the median (best) milliseconds of the matrix products and of
everything else.
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

from result_files import add_results_argument, recording  # noqa: E402


def make(spec: str, out: Path) -> None:
    import make_models
    import onnx

    name, _, layers = spec.partition(":")
    make_models.LAYERS = int(layers or make_models.LAYERS)
    onnx.save(make_models.GENERATORS[name](), str(out))


def profile_steps(models: list, names: list[Path], inputs: dict, rounds: int) -> None:
    """Per NEFF: instructions, and matmul / other milliseconds of the bound steps."""
    bounds = []
    for model, name in zip(models, names, strict=True):
        model.execute(inputs)
        executor = model.executors[0]
        bound = executor.functions[executor.entry].bound(executor)
        bounds.append(bound)
        print(f"{name}: {len(bound.steps)} instructions")
    times = [([], []) for _ in bounds]
    with np.errstate(all="ignore"):
        for _ in range(rounds):
            for bound, (mm, other) in zip(bounds, times, strict=True):
                spent = [0.0, 0.0]
                for step, op in zip(bound.steps, bound.names, strict=True):
                    start = time.perf_counter()
                    step()
                    spent[op != "dot_general"] += time.perf_counter() - start
                mm.append(spent[0])
                other.append(spent[1])
    for name, (mm, other) in zip(names, times, strict=True):
        print(f"{str(name):40} matmul {statistics.median(mm) * 1e3:8.1f} ms  everything else "
              f"{statistics.median(other) * 1e3:7.1f} ms (best {min(other) * 1e3:6.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--make", metavar="NAME:LAYERS")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", action="store_true")
    add_results_argument(parser)
    args = parser.parse_args()
    if args.make:
        make(args.make, args.paths[0])
        return
    name = f"compare_neffs-{args.paths[0].stem}" + ("-steps" if args.steps else "")
    with recording(name, f"NEFFs of {args.paths[0].name} side by side", args.results):
        compare(args)


def compare(args: argparse.Namespace) -> None:
    """Run the NEFFs and onnxruntime alternately (or their steps); print the times."""
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
    if args.steps:
        profile_steps([LoadedModel(read_neff(str(p))) for p in neffs], neffs, inputs,
                      args.rounds)
        return
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
