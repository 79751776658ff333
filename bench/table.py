"""The benchmark table: nxcc against onnxruntime on the same cores, one row per model.

    python bench/table.py [MODEL ...] [--duration S] [--warmup N] [--threads N] [--rounds R]
                          [--processes P] [--no-floor] [--keep-blas-env] [--nxcc-tree DIR]
                          [--json OUT.json] [--results DIR]

MODEL is a name below (default: all of them, in this order) or a path to an .onnx file:

    mlp          examples/mlp.onnx (4x16 -> 10)
    wide_mlp     batch 64, 1024 -> 4096 -> 1024                 (bench/make_models.py)
    squeezenet, resnet50, densenet121, vgg19   onnx's light models (onnx/backend/test/data/light)
    bert_base    BERT-base-size encoder, seq 128                (bench/make_models.py)
    gpt2_small   GPT-2-small-size decoder, seq 128              (bench/make_models.py)

For each model, each step in a process of its own: compile for trn1 at -O2 (time of
`compile_model`), then `--processes` rounds (3) of `neuronx-cc benchmark --json` on the
NEFF, the NEFF's matrix products alone (`bench/gemm_floor.py`'s recording, `--rounds`
rounds, the median), and onnxruntime's CPU provider with the same thread count
(`bench/worker.py ort`), alternated, all on the same seeded random inputs, nxcc and
onnxruntime each timing executions for `--duration` seconds after `--warmup` untimed ones.
Each latency is the median over its processes: the products' time moves by up to 20%
from one process to the next on a 2-core VM (BERT's: 131 or 155-159 ms, four processes),
more than one process's own runs do. Columns: compile time; load time of each (read + load, session
creation); median latency of each and their ratio; the products' median time, `floor`
(products / onnxruntime: the ratio nxcc cannot go below while its products are these BLAS
calls) and `nxcc/floor` (nxcc / products); peak resident memory of each process (VmHWM).
`--no-floor` leaves the products out. nxcc's BLAS gets the same thread count through
OPENBLAS_NUM_THREADS.

The measuring processes run without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (as a user's
machine runs; `--keep-blas-env` keeps the caller's values) and read the trees' modules as
bytecode, compiled first (`result_files.byte_compile`); the table and the BLAS kernel the
workers' numpy ran are written to bench/results/table.md and table.json (`--results`).
`--nxcc-tree` measures another source tree of nxcc (e.g. an older commit unpacked with
`git archive`) with this table's code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from make_models import GENERATORS, ensure  # noqa: E402
from result_files import (  # noqa: E402
    BLAS_VARIABLES,
    add_results_argument,
    byte_compile,
    measurement_environment,
    recording,
)

from nxcc.backend.runtime.benchmark import random_inputs  # noqa: E402
from nxcc.backend.runtime.model import TensorInfo  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = ["mlp", "wide_mlp", "squeezenet", "resnet50", "densenet121", "vgg19", "bert_base",
          "gpt2_small"]


def model_path(name: str, models_dir: Path) -> Path:
    """The .onnx file of model `name` (generated on first use), or `name` as a path."""
    if name == "mlp":
        return REPO / "examples" / "mlp.onnx"
    if name in GENERATORS:
        return ensure(name, models_dir)
    if (LIGHT / f"light_{name}.onnx").exists():
        return LIGHT / f"light_{name}.onnx"
    path = Path(name)
    if path.suffix == ".onnx" and path.exists():
        return path
    raise SystemExit(f"ERROR: unknown model {name!r}: give one of {', '.join(MODELS)} or an "
                     ".onnx path")


def write_inputs(model: Path, out: Path) -> None:
    """Seeded random inputs for the graph inputs of `model` (not its initializers)."""
    m = onnx.load(str(model), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    infos = []
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        t = inp.type.tensor_type
        dims = tuple(d.dim_value or 1 for d in t.shape.dim)
        infos.append(TensorInfo(inp.name, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type),
                                dims))
    np.savez(out, **random_inputs(infos))


#: The environment of the measuring processes (set by `main` from `--keep-blas-env`).
BASE_ENVIRONMENT: dict[str, str] = measurement_environment()


def run_json(args: list[str], pythonpath: Path, env: dict[str, str]) -> dict:
    """Run `python ARGS` with `pythonpath` in BASE_ENVIRONMENT plus `env`; its last stdout
    line as JSON."""
    full = {**BASE_ENVIRONMENT, **env, "PYTHONPATH": str(pythonpath)}
    # run from the tree itself: `python -m` puts the working directory first on sys.path
    done = subprocess.run([sys.executable, *args], env=full, capture_output=True, text=True,
                          cwd=pythonpath)
    if done.returncode != 0:
        raise SystemExit(f"ERROR: {' '.join(args[:3])} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


WORKER = str(REPO / "bench" / "worker.py")


def compile_step(name: str, path: Path, opts: argparse.Namespace, tmp: Path, tree: Path
                 ) -> tuple[Path, Path, dict[str, str], dict]:
    """Seeded inputs for model `path` and its NEFF compiled by nxcc from `tree` (a process
    of its own): (inputs .npz, NEFF, the environment of nxcc's processes, the compile
    worker's JSON)."""
    inputs, neff = tmp / f"{name}.npz", tmp / f"{name}.neff"
    write_inputs(path, inputs)
    env = {"OPENBLAS_NUM_THREADS": str(opts.threads), "NXCC_RUNTIME_DIR": str(tmp / "rt")}
    compiled = run_json([WORKER, "compile", str(path), str(neff)], tree, env)
    return inputs, neff, env, compiled


def timing_options(opts: argparse.Namespace) -> list[str]:
    return ["--warmup", str(opts.warmup), "--duration", str(opts.duration)]


def onnxruntime_step(path: Path, inputs: Path, opts: argparse.Namespace) -> dict:
    """onnxruntime on model `path` (a process of its own): the ort worker's JSON."""
    return run_json([WORKER, "ort", str(path), str(inputs), "--threads", str(opts.threads),
                     *timing_options(opts)], REPO, {})


def products_step(neff: Path, inputs: Path, opts: argparse.Namespace, env: dict[str, str]
                  ) -> dict:
    """The NEFF's matrix products alone (a process of its own): the products worker's JSON
    (products, gflop, products_ms)."""
    return run_json([WORKER, "products", str(neff), str(inputs), "--rounds", str(opts.rounds)],
                    REPO, env)


def measure(name: str, path: Path, opts: argparse.Namespace, tmp: Path) -> dict:
    """One row: compile, then `opts.processes` rounds of nxcc benchmark, the products
    (unless --no-floor) and onnxruntime, each in a process of its own and the three
    alternated, so that a slow spell of the machine falls on every side; each latency is
    the median over its processes (load times too; peak memory the largest)."""
    tree = Path(opts.nxcc_tree).resolve()
    inputs, neff, env, compiled = compile_step(name, path, opts, tmp, tree)
    runs: dict[str, list[dict]] = {"nxcc": [], "ort": [], "products": []}
    for _ in range(max(1, opts.processes)):
        runs["nxcc"].append(run_json(["-m", "nxcc", "benchmark", str(neff), "--inputs",
                                      str(inputs), "--json", *timing_options(opts)], tree, env))
        if opts.floor:
            runs["products"].append(products_step(neff, inputs, opts, env))
        runs["ort"].append(onnxruntime_step(path, inputs, opts))
    nxcc, ort = runs["nxcc"], runs["ort"]
    row = {"model": name, "compile_s": compiled["compile_s"],
           "nxcc_load_ms": median_of(nxcc, "load_ms"), "ort_load_ms": median_of(ort, "load_ms"),
           "nxcc_ms": median_of(nxcc, "latency_p50_ms"),
           "ort_ms": median_of(ort, "latency_p50_ms"),
           "nxcc_peak_mb": max(r["peak_memory_bytes"] for r in nxcc) / 2**20,
           "ort_peak_mb": max(r["peak_memory_bytes"] for r in ort) / 2**20,
           "nxcc_iterations": sum(r["iterations"] for r in nxcc),
           "ort_iterations": sum(r["iterations"] for r in ort),
           "processes": len(nxcc),
           "nxcc_ms_each": [r["latency_p50_ms"] for r in nxcc],
           "ort_ms_each": [r["latency_p50_ms"] for r in ort]}
    row["ratio"] = row["nxcc_ms"] / row["ort_ms"]
    if opts.floor:
        products_ms = median_of(runs["products"], "products_ms")
        row.update(products_ms=products_ms, floor=products_ms / row["ort_ms"],
                   nxcc_floor=row["nxcc_ms"] / products_ms,
                   products_ms_each=[r["products_ms"] for r in runs["products"]])
    return row


def median_of(runs: list[dict], key: str) -> float:
    """The median of `key` over the processes' JSON results."""
    return float(statistics.median(r[key] for r in runs))


HEADER = ("| model | compile s | nxcc load ms | ort load ms | nxcc ms | ort ms | ratio "
          "| products ms | floor | nxcc/floor | nxcc peak MB | ort peak MB |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")


def format_row(r: dict) -> str:
    floor = (f"{r['products_ms']:.3g} | {r['floor']:.2f}x | {r['nxcc_floor']:.2f}x"
             if "floor" in r else "- | - | -")
    return (f"| {r['model']} | {r['compile_s']:.2f} | {r['nxcc_load_ms']:.0f} | "
            f"{r['ort_load_ms']:.0f} | {r['nxcc_ms']:.3g} | {r['ort_ms']:.3g} | "
            f"{r['ratio']:.2f}x | {floor} | {r['nxcc_peak_mb']:.0f} | {r['ort_peak_mb']:.0f} |")


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The models and options every table of bench/ takes."""
    parser.add_argument("models", nargs="*", default=MODELS, metavar="MODEL")
    parser.add_argument("--duration", type=float, default=3.0,
                        help="seconds of timed executions per model and side")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models-dir", type=Path, default=REPO / "bench" / ".models")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--rounds", type=int, default=20,
                        help="timed rounds of the matrix products alone (the median)")
    parser.add_argument("--processes", type=int, default=3,
                        help="measuring processes per side and model, alternated (medians)")
    parser.add_argument("--keep-blas-env", action="store_true",
                        help="measure with the caller's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE "
                             "instead of without them")
    add_results_argument(parser)


def settings_line(opts: argparse.Namespace) -> str:
    """The first line of a table: threads and which BLAS variables the measurements had."""
    blas = ("the caller's " + ", ".join(f"{k}={os.environ.get(k, '(unset)')}"
                                        for k in BLAS_VARIABLES)
            if opts.keep_blas_env else f"{' and '.join(BLAS_VARIABLES)} unset")
    return f"{opts.threads} threads each; {blas}"


def print_table(opts: argparse.Namespace, banner: str, header: str,
                measure_row: Callable[[str, Path, argparse.Namespace, Path], dict],
                format_line: Callable[[dict], str], name: str, title: str) -> None:
    """`banner` and `header`, then a row per model of `opts.models` as it is measured (each
    in one temporary directory); the rows also to `opts.json` when given, and everything to
    the result files `name`.md and `name`.json. An unknown model ends it before any line."""
    global BASE_ENVIRONMENT
    BASE_ENVIRONMENT = measurement_environment(opts.keep_blas_env)
    paths = [(name, model_path(name, opts.models_dir)) for name in opts.models]
    for tree in {REPO, Path(getattr(opts, "nxcc_tree", REPO)).resolve()}:
        byte_compile(tree)
    with recording(name, title, opts.results, markdown=True) as rec:
        print(banner)
        print(header, flush=True)
        rows = []
        with tempfile.TemporaryDirectory(prefix="nxcc-bench-") as tmp:
            for model, path in paths:
                rows.append(measure_row(Path(model).stem, path, opts, Path(tmp)))
                print(format_line(rows[-1]), flush=True)
        rec.data["rows"] = rows
        rec.blas = run_json([WORKER, "blas"], REPO, {"OPENBLAS_NUM_THREADS": str(opts.threads)})
        rec.notes.append(f"BLAS as the measuring processes saw it; {settings_line(opts)}")
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="leave out the matrix products alone (floor, nxcc/floor)")
    parser.add_argument("--nxcc-tree", default=str(REPO), help="source tree of nxcc to measure")
    opts = parser.parse_args()
    banner = (f"{settings_line(opts)}; median latency over {opts.duration} s after "
              f"{opts.warmup} warm-up runs, median over {opts.processes} alternated processes "
              f"per side; nxcc from {Path(opts.nxcc_tree).resolve()}")
    print_table(opts, banner, HEADER, measure, format_row, "table",
                "nxcc against onnxruntime")


if __name__ == "__main__":
    main()
