"""Per-instruction overhead of the runtime's executor, on a chain of cheap ops.

    python bench/executor_overhead.py [--length N] [--repeat R]

Builds a program of N elementwise ops on f32[8] (add, multiply, maximum, negate in turn, each
on the previous result and a weight), loads it (`LoadedModel`) and times `execute` (median of
R runs); the same for a chain of length 0 (the fixed cost of one execution). Prints the
per-instruction overhead in microseconds: (t(N) - t(0)) / N.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_files import add_results_argument, recording  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=50)
    add_results_argument(parser)
    args = parser.parse_args()
    with recording("executor_overhead", "The executor's cost per instruction",
                   args.results) as rec:
        per_op, base = overhead_us(args.length, args.repeat)
        print(f"{per_op:.2f} us per instruction ({args.length} ops: add, multiply, maximum, "
              f"negate on f32[8]); {base:.1f} us per execution of an empty program")
        rec.data.update(per_instruction_us=per_op, empty_program_us=base)


if __name__ == "__main__":
    main()
