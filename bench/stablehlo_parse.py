"""Benchmark: read a generated StableHLO module of N ops (default 100,000) into the HLO
syntax tree (tokenize, parse the MLIR, convert), as `import_xla` does before lowering.

    PYTHONPATH=. python bench/stablehlo_parse.py [--ops N] [--repeat R] [--locations]

The module imitates `jax.jit(f).lower(x).as_text()`: a mix of elementwise ops with the
short type form, broadcast_in_dim, dot_general with contracting dims, reduce with
`applies`, compare with a direction and a type, slices, constants, `%1:2` results, and calls
of a small private function; `--locations` adds a `loc(#locN)` to every op as
`as_text(debug_info=True)` does. It prints the text size and the best time; the target is a
few seconds for 100,000 ops on one core.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.compiler.stablehlo.frontend import parse_stablehlo  # noqa: E402

T = "tensor<128x256xf32>"


def _op(k: int, prev: str, rng: random.Random, loc: str) -> list[str]:
    kind = rng.randrange(8)
    if kind == 0:
        return [f"    %{k} = stablehlo.add {prev}, %arg0 : {T}{loc}"]
    if kind == 1:
        return [f"    %{k} = stablehlo.tanh {prev} : {T}{loc}"]
    if kind == 2:
        return [f"    %cst_{k} = stablehlo.constant dense<5.000000e-01> : tensor<f32>{loc}",
                f"    %{k} = stablehlo.broadcast_in_dim %cst_{k}, dims = [] : "
                f"(tensor<f32>) -> {T}{loc}"]
    if kind == 3:
        return [f"    %{k} = stablehlo.dot_general {prev}, %arg1, contracting_dims = [1] x "
                f"[0], precision = [DEFAULT, DEFAULT] : ({T}, tensor<256x256xf32>) -> {T}{loc}"]
    if kind == 4:
        return [f"    %r{k} = stablehlo.reduce({prev} init: %zero) applies stablehlo.add "
                f"across dimensions = [1] : ({T}, tensor<f32>) -> tensor<128xf32>{loc}",
                f"    %{k} = stablehlo.broadcast_in_dim %r{k}, dims = [0] : "
                f"(tensor<128xf32>) -> {T}{loc}"]
    if kind == 5:
        return [f"    %p{k} = stablehlo.compare  GT, {prev}, %arg0,  FLOAT : ({T}, {T}) -> "
                f"tensor<128x256xi1>{loc}",
                f"    %{k} = stablehlo.select %p{k}, {prev}, %arg0 : tensor<128x256xi1>, {T}{loc}"]
    if kind == 6:
        return [f"    %s{k} = stablehlo.slice {prev} [0:128, 0:128] : ({T}) -> "
                f"tensor<128x128xf32>{loc}",
                f"    %{k} = stablehlo.concatenate %s{k}, %s{k}, dim = 1 : "
                f"(tensor<128x128xf32>, tensor<128x128xf32>) -> {T}{loc}"]
    return [f"    %c{k}:2 = call @pair({prev}) : ({T}) -> ({T}, {T}){loc}",
            f"    %{k} = stablehlo.multiply %c{k}#0, %c{k}#1 : {T}{loc}"]


def generate(n: int, locations: bool = False, seed: int = 0) -> str:
    """A StableHLO module of about `n` ops."""
    rng = random.Random(seed)
    lines = ["module @jit_bench attributes {mhlo.num_partitions = 1 : i32, "
             "mhlo.num_replicas = 1 : i32} {",
             f"  func.func public @main(%arg0: {T}, %arg1: tensor<256x256xf32>) -> "
             f"({T} {{jax.result_info = \"result\"}}) {{",
             "    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>"]
    prev, k, count = "%arg0", 0, 1
    while count < n:
        loc = f" loc(#loc{k % 997})" if locations else ""
        new = _op(k, prev, rng, loc)
        lines += new
        count += len(new)
        prev = f"%{k}"
        k += 1
    lines += [f"    return {prev} : {T}", "  }",
              f"  func.func private @pair(%arg0: {T}) -> ({T}, {T}) {{",
              f"    %0 = stablehlo.negate %arg0 : {T}",
              f"    return %0, %arg0 : {T}, {T}", "  }", "}"]
    if locations:
        lines += [f'#loc{j} = loc("bench.py":{j}:1)' for j in range(997)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--locations", action="store_true")
    add_results_argument(ap)
    args = ap.parse_args()
    name = "stablehlo_parse-locations" if args.locations else "stablehlo_parse"
    with recording(name, "StableHLO parsing speed", args.results) as rec:
        rec.data.update(parse_speed(args.ops, args.repeat, args.locations))


def parse_speed(ops: int, repeat: int, locations: bool) -> dict:
    """Best of `repeat` parses of a generated module; prints one line."""
    text = generate(ops, locations)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        module = parse_stablehlo(text, "bench.mlir")
        best = min(best, time.perf_counter() - start)
    n = sum(len(c.instructions) for c in module.computations)
    print(f"{ops} ops, {len(text) / 1e6:.1f} MB -> {n} HLO instructions: best of "
          f"{repeat} {best:.2f} s ({ops / best:,.0f} ops/s)")
    return {"ops": ops, "bytes": len(text), "hlo_instructions": n, "best_s": best}


if __name__ == "__main__":
    main()
