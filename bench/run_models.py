"""Benchmark: nxcc's runtime against onnxruntime (CPU) on the committed models.

    python bench/run_models.py [--repeat N] [MODEL.onnx ...]

Compiles each model for trn1 at -O2, then times `LoadedModel.execute` and onnxruntime's
`InferenceSession.run` on the same inputs (median of N runs after one warm-up), and checks
that their outputs agree. Prints one line per model.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.backend.neff import read_neff  # noqa: E402
from nxcc.backend.runtime.model import LoadedModel  # noqa: E402
from nxcc.driver.compile import compile_model  # noqa: E402
from nxcc.driver.options import CompileOptions  # noqa: E402

DEFAULT = sorted((Path(__file__).resolve().parent.parent / "tests/e2e/models").glob("*.onnx"))


def inputs_for(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    out = {}
    for inp in model.graph.input:
        if inp.name not in inits:
            dims = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
            out[inp.name] = rng.standard_normal(dims).astype(np.float32)
    return out


def median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=50)
    add_results_argument(parser)
    args = parser.parse_args()
    with recording("run_models", "The test models against onnxruntime", args.results) as rec:
        rec.data["rows"] = run_all(args.models, args.repeat)


def run_all(models: list[Path], repeat: int) -> list[dict]:
    """Compile and time each model against onnxruntime; a line and a row per model."""
    rows = []
    print(f"{'model':28} {'compile ms':>10} {'nxcc ms':>9} {'ort ms':>8} {'max |diff|':>11}")
    for path in models:
        if "dynbatch" in path.name:
            continue
        inputs = inputs_for(path)
        with tempfile.TemporaryDirectory() as tmp:
            neff = str(Path(tmp) / "m.neff")
            start = time.perf_counter()
            compile_model(str(path), CompileOptions(target="trn1", output=neff),
                          emit=lambda s: None)
            compile_ms = (time.perf_counter() - start) * 1e3
            model = LoadedModel(read_neff(neff))
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        ours = model.execute(inputs)
        ref = session.run(None, inputs)
        diff = max(float(np.max(np.abs(o - r))) for o, r in zip(ours.values(), ref,
                                                                 strict=True))
        nx = median_ms(functools.partial(model.execute, inputs), repeat)
        rt = median_ms(functools.partial(session.run, None, inputs), repeat)
        print(f"{path.stem:28} {compile_ms:10.1f} {nx:9.3f} {rt:8.3f} {diff:11.2e}")
        rows.append({"model": path.stem, "compile_ms": compile_ms, "nxcc_ms": nx, "ort_ms": rt,
                     "max_abs_diff": diff})
    return rows


if __name__ == "__main__":
    main()
