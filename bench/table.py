"""The benchmark table: nxcc against onnxruntime on the same cores, one row per model.

    python bench/table.py [MODEL ...] [--duration S] [--warmup N] [--threads N]
                          [--nxcc-tree DIR] [--json OUT.json]

MODEL is a name below (default: all of them, in this order) or a path to an .onnx file:

    mlp          examples/mlp.onnx (4x16 -> 10)
    wide_mlp     batch 64, 1024 -> 4096 -> 1024                 (bench/make_models.py)
    squeezenet, resnet50, densenet121, vgg19   onnx's light models (onnx/backend/test/data/light)
    bert_base    BERT-base-size encoder, seq 128                (bench/make_models.py)
    gpt2_small   GPT-2-small-size decoder, seq 128              (bench/make_models.py)

For each model, each step in a process of its own: compile for trn1 at -O2 (time of
`compile_model`), `neuronx-cc benchmark --json` on the NEFF, and onnxruntime's CPU provider
with the same thread count (`bench/worker.py ort`), both on the same seeded random inputs,
each timing executions for `--duration` seconds after `--warmup` untimed ones. Columns:
compile time; load time of each (read + load, session creation); median latency of each
and their ratio; peak resident memory of each process (VmHWM). nxcc's BLAS gets the same
thread count through OPENBLAS_NUM_THREADS. `--nxcc-tree` measures another source tree of
nxcc (e.g. an older commit unpacked with `git archive`) with this table's code.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def run_json(args: list[str], pythonpath: Path, env: dict[str, str]) -> dict:
    """Run `python ARGS` with `pythonpath`; its last stdout line as JSON."""
    full = {**os.environ, **env, "PYTHONPATH": str(pythonpath)}
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


def measure(name: str, path: Path, opts: argparse.Namespace, tmp: Path) -> dict:
    """One row: compile, nxcc benchmark, onnxruntime; each in its own process."""
    tree = Path(opts.nxcc_tree).resolve()
    inputs, neff, env, compiled = compile_step(name, path, opts, tmp, tree)
    nxcc = run_json(["-m", "nxcc", "benchmark", str(neff), "--inputs", str(inputs), "--json",
                     *timing_options(opts)], tree, env)
    ort = onnxruntime_step(path, inputs, opts)
    return {"model": name, "compile_s": compiled["compile_s"],
            "nxcc_load_ms": nxcc["load_ms"], "ort_load_ms": ort["load_ms"],
            "nxcc_ms": nxcc["latency_p50_ms"], "ort_ms": ort["latency_p50_ms"],
            "ratio": nxcc["latency_p50_ms"] / ort["latency_p50_ms"],
            "nxcc_peak_mb": nxcc["peak_memory_bytes"] / 2**20,
            "ort_peak_mb": ort["peak_memory_bytes"] / 2**20,
            "nxcc_iterations": nxcc["iterations"], "ort_iterations": ort["iterations"]}


HEADER = ("| model | compile s | nxcc load ms | ort load ms | nxcc ms | ort ms | ratio "
          "| nxcc peak MB | ort peak MB |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: |")


def format_row(r: dict) -> str:
    return (f"| {r['model']} | {r['compile_s']:.2f} | {r['nxcc_load_ms']:.0f} | "
            f"{r['ort_load_ms']:.0f} | {r['nxcc_ms']:.3g} | {r['ort_ms']:.3g} | "
            f"{r['ratio']:.2f}x | {r['nxcc_peak_mb']:.0f} | {r['ort_peak_mb']:.0f} |")


def cpu_name() -> str:
    """The CPU's model name and family from /proc/cpuinfo (else what `platform` knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            pairs = [line.split(":", 1) for line in f.read(1 << 16).splitlines() if ":" in line]
        fields = {k.strip(): v for k, v in pairs}
    except OSError:
        return platform.processor() or "?"
    name = fields.get("model name", "?").strip()
    family = fields.get("cpu family", "").strip()
    return f"{name} (family {family})" if family else name


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The models and options every table of bench/ takes."""
    parser.add_argument("models", nargs="*", default=MODELS, metavar="MODEL")
    parser.add_argument("--duration", type=float, default=3.0,
                        help="seconds of timed executions per model and side")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models-dir", type=Path, default=REPO / "bench" / ".models")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")


def machine_line(opts: argparse.Namespace) -> str:
    """The first line of a table: host, CPUs, OPENBLAS_CORETYPE and threads."""
    return (f"# {platform.node()}: {os.cpu_count()} CPUs, {cpu_name()}; "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
            f"{opts.threads} threads each")


def print_table(opts: argparse.Namespace, banner: str, header: str,
                measure_row: Callable[[str, Path, argparse.Namespace, Path], dict],
                format_line: Callable[[dict], str]) -> None:
    """`banner` and `header`, then a row per model of `opts.models` as it is measured (each
    in one temporary directory); the rows also to `opts.json` when given. An unknown model
    ends it before any line."""
    paths = [(name, model_path(name, opts.models_dir)) for name in opts.models]
    print(banner)
    print(header, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nxcc-bench-") as tmp:
        for name, path in paths:
            rows.append(measure_row(Path(name).stem, path, opts, Path(tmp)))
            print(format_line(rows[-1]), flush=True)
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--nxcc-tree", default=str(REPO), help="source tree of nxcc to measure")
    opts = parser.parse_args()
    banner = (f"{machine_line(opts)}; median latency over {opts.duration} s after "
              f"{opts.warmup} warm-up runs; nxcc from {Path(opts.nxcc_tree).resolve()}")
    print_table(opts, banner, HEADER, measure, format_row)


if __name__ == "__main__":
    main()
