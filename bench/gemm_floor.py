"""The matrix-product floor: nxcc's matrix products alone, against onnxruntime's whole run.

    python bench/gemm_floor.py [MODEL ...] [--duration S] [--warmup N] [--threads N]
                               [--rounds R] [--processes P] [--keep-blas-env]
                               [--json OUT.json] [--results DIR]

MODEL as in `bench/table.py` (default: all of its models). For each model, each step in a
process of its own with the same BLAS thread count as the table: compile for trn1 at -O2;
load the NEFF with `numpy.matmul` and `numpy.dot` wrapped so that one execution records
every matrix product the kernels hand to BLAS (its operands and output, as the kernels lay
them out: im2col columns, transposed views, batched attention products); then time those
products alone, back to back on the recorded arrays, `--rounds` times (the median); then
onnxruntime's CPU provider on the whole model, as the table does; the two alternated in
`--processes` processes each (the median of each side). Columns: the products'
GFLOP, their milliseconds and GFLOP/s with numpy's BLAS, onnxruntime's milliseconds for the
whole model and the GFLOP/s that would be if it did nothing else, and `floor`: products
milliseconds / onnxruntime milliseconds, the ratio nxcc cannot go below however little
else it does, while its products are numpy's BLAS calls of these shapes. As in the table,
the measuring processes run without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unless
`--keep-blas-env`; the table is written to bench/results/gemm_floor.md and .json.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


@dataclass(frozen=True)
class Product:
    """One recorded BLAS call: `call(a, b, *args, **kwargs)` (`out`, if any, among args or
    kwargs: the kernels bind it positionally)."""

    call: Callable[..., Any]
    a: np.ndarray
    b: np.ndarray
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]

    @property
    def flops(self) -> int:
        """2 M K N per matrix of the (broadcast) batch; a vector operand counts as one row
        or column."""
        a, b = self.a.shape, self.b.shape
        if len(a) == 0 or len(b) == 0:
            return 0
        m = a[-2] if len(a) >= 2 else 1
        k = a[-1]
        n = b[-1] if len(b) >= 2 else 1
        batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
        return 2 * math.prod(batch) * m * k * n

    def run(self) -> None:
        self.call(self.a, self.b, *self.args, **self.kwargs)


def record_products(neff: Path, inputs: Mapping[str, np.ndarray]) -> list[Product]:
    """The matrix products of one execution of `neff` on `inputs`, in order. numpy's matmul
    and dot are wrapped from before the load (the executor binds some products at load)
    until after the execution, then put back. The executor runs on one thread, so the
    products are whole, not cut into the slabs a function split between the core's
    threads gives each of them (`parallel_steps`): they are then timed at the BLAS's
    thread count."""
    from nxcc.backend.neff import read_neff
    from nxcc.backend.runtime.model import LoadedModel

    products: list[Product] = []
    originals = np.matmul, np.dot

    def recorder(call: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
            products.append(Product(call, np.asarray(a), np.asarray(b), args, dict(kwargs)))
            return call(a, b, *args, **kwargs)
        return recorded

    np.matmul, np.dot = recorder(originals[0]), recorder(originals[1])
    try:
        model = LoadedModel(read_neff(neff))
        for executor in model.executors:
            executor.threads = 1
        model.execute(dict(inputs))
    finally:
        np.matmul, np.dot = originals
    return products


def time_products(products: list[Product], rounds: int) -> float:
    """Median seconds of running every product once, in order."""
    for p in products:
        p.run()
    times = []
    for _ in range(max(1, rounds)):
        start = time.perf_counter()
        for p in products:
            p.run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def products_one(neff: str, inputs: str, rounds: int) -> dict:
    """The worker step: record and time the products of `neff`; JSON-ready."""
    with np.load(inputs, allow_pickle=False) as data:
        feed = {k: data[k] for k in data.files}
    products = record_products(Path(neff), feed)
    seconds = time_products(products, rounds)
    return {"products": len(products), "gflop": sum(p.flops for p in products) / 1e9,
            "products_ms": seconds * 1e3}


def measure(name: str, path: Path, opts: argparse.Namespace, tmp: Path) -> dict:
    """One row: compile, then `opts.processes` rounds of the products and onnxruntime, each
    in a process of its own and alternated; the median of each side over its processes."""
    from table import compile_step, median_of, onnxruntime_step, products_step

    inputs, neff, env, _ = compile_step(name, path, opts, tmp, REPO)
    found, orts = [], []
    for _ in range(max(1, opts.processes)):
        found.append(products_step(neff, inputs, opts, env))
        orts.append(onnxruntime_step(path, inputs, opts))
    products_ms, ort_ms = median_of(found, "products_ms"), median_of(orts, "latency_p50_ms")
    gflop = found[0]["gflop"]
    return {"model": name, "products": found[0]["products"], "gflop": gflop,
            "products_ms": products_ms, "ort_ms": ort_ms,
            "blas_gflops": gflop / products_ms * 1e3, "ort_gflops": gflop / ort_ms * 1e3,
            "floor": products_ms / ort_ms}


HEADER = ("| model | products | GFLOP | products ms | GFLOP/s | ort ms (whole model) | "
          "ort GFLOP/s | floor |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")


def format_row(r: dict) -> str:
    return (f"| {r['model']} | {r['products']} | {r['gflop']:.3g} | {r['products_ms']:.3g} | "
            f"{r['blas_gflops']:.0f} | {r['ort_ms']:.3g} | {r['ort_gflops']:.0f} | "
            f"{r['floor']:.2f}x |")


def main() -> None:
    from table import add_common_arguments, print_table, settings_line

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    opts = parser.parse_args()
    banner = (f"{settings_line(opts)}; products: median of {opts.rounds} rounds; "
              f"onnxruntime: median over {opts.duration} s after {opts.warmup} warm-up runs; "
              f"each side median over {opts.processes} alternated processes")
    print_table(opts, banner, HEADER, measure, format_row, "gemm_floor",
                "The matrix-product floor: nxcc's products alone against onnxruntime")


if __name__ == "__main__":
    main()
