"""Per-instruction overhead of the runtime's executor, on a chain of cheap ops, and a small
model's execution against onnxruntime's.

    python bench/executor_overhead.py [--length N] [--repeat R] [--model M.onnx]
                                      [--rounds K] [--threads T] [--keep-blas-env]

Builds a program of N elementwise ops on f32[8] (add, multiply, maximum, negate in turn, each
on the previous result and a weight), loads it (`LoadedModel`) and times `execute` (median of
R runs); the same for a chain of length 0 (the fixed cost of one execution). Prints the
per-instruction overhead in microseconds: (t(N) - t(0)) / N.

Then, when onnxruntime is installed, `--model` (default examples/mlp.onnx, whose time is
per-execution overhead) compiled for trn1 and executed as `neuronx-cc benchmark` does
(`Runtime.execute`, seeded random inputs), against an onnxruntime session on the same inputs
(CPU provider, T intra-op threads, one inter-op thread): K rounds, each timing R executions
of one side then of the other, in one process, so that a change of the machine's load falls
on both. Prints the median latency of each and their ratio. The script runs itself without
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (as bench/table.py's measuring processes do) unless
`--keep-blas-env`.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from result_files import (  # noqa: E402
    add_results_argument,
    recording,
    rerun_without_blas_variables,
)

from nxcc.backend.neff import read_neff  # noqa: E402
from nxcc.backend.program.package import NeffSpec, write_program_neff  # noqa: E402
from nxcc.backend.runtime.model import LoadedModel  # noqa: E402
from nxcc.ir.builder import Builder  # noqa: E402
from nxcc.ir.core import Function, Module, Value  # noqa: E402
from nxcc.ir.dtypes import DType  # noqa: E402
from nxcc.ir.types import TensorType  # noqa: E402

OPS = ("add", "multiply", "maximum", "negate")


def chain_module(length: int) -> Module:
    """x -> op_1 -> ... -> op_length on f32[8]."""
    module = Module("chain")
    x = Value(TensorType(DType.F32, (8,)), "x")
    fn = Function("main", [x])
    module.add_function(fn)
    b = Builder(module, fn)
    w = b.constant(np.linspace(0.5, 1.5, 8).astype(np.float32))
    y = x
    for i in range(length):
        opcode = OPS[i % len(OPS)]
        y = b.op(opcode, [y] if opcode == "negate" else [y, w])
    fn.results = [y]
    fn.result_names = ["y"]
    return module


def execute_time(length: int, repeat: int, tmp: Path) -> float:
    """Median seconds of one execution of the chain of `length` ops."""
    path = tmp / f"chain{length}.neff"
    write_program_neff(str(path), [chain_module(length)], NeffSpec("trn1", 1, "chain"))
    model = LoadedModel(read_neff(path))
    inputs = {"x": np.ones(8, np.float32)}
    for _ in range(10):
        model.execute(inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        model.execute(inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def overhead_us(length: int, repeat: int) -> tuple[float, float]:
    """(per-instruction overhead in us, fixed cost of one execution in us)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = execute_time(0, repeat, Path(tmp))
        full = execute_time(length, repeat, Path(tmp))
    return (full - base) / length * 1e6, base * 1e6


def model_against_onnxruntime(model: Path, repeat: int, rounds: int, threads: int
                              ) -> dict[str, float]:
    """Median seconds of one execution of `model` by nxcc's runtime and by onnxruntime,
    `rounds` rounds of `repeat` executions each, the sides alternating."""
    from worker import onnxruntime_session

    from nxcc.backend.runtime.benchmark import random_inputs
    from nxcc.backend.runtime.nrt import Runtime
    from nxcc.driver.compile import compile_model
    from nxcc.driver.options import CompileOptions

    with tempfile.TemporaryDirectory() as tmp:
        neff = str(Path(tmp) / "model.neff")
        compile_model(str(model), CompileOptions(target="trn1", output=neff),
                      emit=lambda s: None)
        runtime = Runtime()
        runtime.init(target="trn1")
        with runtime:
            handle = runtime.load(read_neff(neff))
            feed = random_inputs(handle.inputs)
            session = onnxruntime_session(str(model), threads)
            sides = {"nxcc": lambda: runtime.execute(handle, feed),
                     "onnxruntime": lambda: session.run(None, feed)}
            times: dict[str, list[float]] = {side: [] for side in sides}
            for r in range(rounds + 1):  # round 0 warms both up
                for side, run in sides.items():
                    for _ in range(repeat):
                        start = time.perf_counter()
                        run()
                        if r:
                            times[side].append(time.perf_counter() - start)
    return {side: statistics.median(t) for side, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--model", type=Path, default=REPO / "examples" / "mlp.onnx")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep-blas-env", action="store_true")
    add_results_argument(parser)
    args = parser.parse_args()
    rerun_without_blas_variables(args.keep_blas_env)
    with recording("executor_overhead", "The executor's cost per instruction",
                   args.results) as rec:
        per_op, base = overhead_us(args.length, args.repeat)
        print(f"{per_op:.2f} us per instruction ({args.length} ops: add, multiply, maximum, "
              f"negate on f32[8]); {base:.1f} us per execution of an empty program")
        rec.data.update(per_instruction_us=per_op, empty_program_us=base)
        if importlib.util.find_spec("onnxruntime") is not None:
            found = model_against_onnxruntime(args.model, args.repeat, args.rounds,
                                              args.threads)
            ratio = found["nxcc"] / found["onnxruntime"]
            print(f"{args.model.name}: nxcc {found['nxcc'] * 1e6:.1f} us, onnxruntime "
                  f"{found['onnxruntime'] * 1e6:.1f} us per execution ({args.threads} "
                  f"threads; medians of {args.rounds} alternating rounds of {args.repeat}): "
                  f"nxcc / onnxruntime {ratio:.2f}x")
            rec.data.update(model=args.model.name, nxcc_us=found["nxcc"] * 1e6,
                            onnxruntime_us=found["onnxruntime"] * 1e6, nxcc_vs_ort=ratio)


if __name__ == "__main__":
    main()
