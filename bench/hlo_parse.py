"""Benchmark: parse a generated HLO module of N instructions (default 100,000).

    PYTHONPATH=. python bench/hlo_parse.py [--instructions N] [--engine fast|lark] [--repeat R]

The module imitates XLA's own dumps: optimised-style lines with `%` names, layouts and
metadata on every instruction, a mix of elementwise ops, broadcasts, reshapes, dots with
contracting dims, reduces with a `to_apply`, compares with a direction, slices, constants
and calls of small computations. It prints the text size and the best parse time; the
target is under 3 seconds for 100,000 instructions with the fast engine on one core.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.compiler.hlo.parser import parse_hlo  # noqa: E402

_DIMS = ["128,256", "256,256", "128,1024", "1024,256"]


def generate(n: int, seed: int = 0) -> str:
    """An HLO module of about `n` instructions (the entry plus two small computations)."""
    rng = random.Random(seed)
    lines = [
        "HloModule bench_module, is_scheduled=true, entry_computation_layout="
        "{(f32[128,256]{1,0}, f32[256,256]{1,0})->f32[128,256]{1,0}}",
        "",
        "%add_f32 (a: f32[], b: f32[]) -> f32[] {",
        "  %a = f32[] parameter(0)",
        "  %b = f32[] parameter(1)",
        "  ROOT %sum = f32[] add(f32[] %a, f32[] %b)",
        "}",
        "",
        "%gelu (x: f32[128,256]) -> f32[128,256] {",
        "  %x = f32[128,256]{1,0} parameter(0)",
        "  %t = f32[128,256]{1,0} tanh(%x)",
        "  ROOT %m = f32[128,256]{1,0} multiply(%x, %t)",
        "}",
        "",
        "ENTRY %main (p0: f32[128,256], p1: f32[256,256]) -> f32[128,256] {",
        '  %p0 = f32[128,256]{1,0} parameter(0), metadata={op_name="x"}',
        '  %p1 = f32[256,256]{1,0} parameter(1), metadata={op_name="w"}',
    ]
    live = ["p0"]
    meta = ('metadata={{op_name="jit(model)/jit(main)/{op}" source_file="/work/model.py" '
            'source_line={line}}}')
    for i in range(n - 7):
        a = rng.choice(live[-8:])
        b = rng.choice(live[-8:])
        kind = i % 10
        m = meta.format(op=("add", "mul", "dot_general", "tanh", "reduce_sum")[i % 5],
                        line=100 + i % 500)
        if kind in (0, 1, 2):
            op = ("add", "multiply", "subtract")[kind]
            line = f"  %{op}.{i} = f32[128,256]{{1,0}} {op}(%{a}, %{b}), {m}"
        elif kind == 3:
            line = (f"  %dot.{i} = f32[128,256]{{1,0}} dot(%{a}, %p1), "
                    f"lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {m}")
        elif kind == 4:
            line = f"  %exponential.{i} = f32[128,256]{{1,0}} exponential(%{a}), {m}"
        elif kind == 5:
            line = (f"  %reduce.{i} = f32[128]{{0}} reduce(%{a}, %zero), dimensions={{1}}, "
                    f"to_apply=%add_f32, {m}")
            lines.append(f"  %zero.{i} = f32[] constant(0)")
            line = line.replace("%zero", f"%zero.{i}")
            lines.append(line)
            line = (f"  %broadcast.{i} = f32[128,256]{{1,0}} broadcast(%reduce.{i}), "
                    f"dimensions={{0}}, {m}")
            a = f"broadcast.{i}"
            lines.append(line)
            live.append(a)
            continue
        elif kind == 6:
            line = (f"  %compare.{i} = pred[128,256]{{1,0}} compare(%{a}, %{b}), "
                    f"direction=GT, {m}")
            lines.append(line)
            line = (f"  %select.{i} = f32[128,256]{{1,0}} select(%compare.{i}, %{a}, %{b}), "
                    f"{m}")
            lines.append(line)
            live.append(f"select.{i}")
            continue
        elif kind == 7:
            line = (f"  %slice.{i} = f32[128,128]{{1,0}} slice(%{a}), "
                    f"slice={{[0:128], [0:128]}}, {m}")
            lines.append(line)
            line = (f"  %concatenate.{i} = f32[128,256]{{1,0}} concatenate(%slice.{i}, "
                    f"%slice.{i}), dimensions={{1}}, {m}")
            lines.append(line)
            live.append(f"concatenate.{i}")
            continue
        elif kind == 8:
            line = f"  %call.{i} = f32[128,256]{{1,0}} call(%{a}), to_apply=%gelu, {m}"
        else:
            line = (f"  %transpose.{i} = f32[128,256]{{1,0}} transpose(%{a}), "
                    f"dimensions={{0,1}}, {m}")
        lines.append(line)
        live.append(line.split("=", 1)[0].strip().lstrip("%"))
        if len(lines) >= n + 13:
            break
    last = live[-1]
    lines.append(f"  ROOT %out = f32[128,256]{{1,0}} add(%{last}, %p0)")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--engine", choices=("fast", "lark"), default="fast")
    ap.add_argument("--repeat", type=int, default=3)
    add_results_argument(ap)
    args = ap.parse_args()
    name = "hlo_parse" if args.engine == "fast" else f"hlo_parse-{args.engine}"
    with recording(name, f"HLO text parsing speed ({args.engine} engine)", args.results) as rec:
        rec.data.update(parse_speed(args.instructions, args.engine, args.repeat))


def parse_speed(instructions: int, engine: str, repeat: int) -> dict:
    """Best of `repeat` parses of a generated module; prints one line."""
    text = generate(instructions)
    if engine == "lark":
        from nxcc.compiler.hlo.lark_engine import parse_hlo_lark as parse
    else:
        parse = parse_hlo
    best = float("inf")
    count = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        module = parse(text, "bench.hlo")
        best = min(best, time.perf_counter() - t0)
        count = sum(len(c.instructions) for c in module.computations)
    print(f"engine={engine} instructions={count} bytes={len(text)} "
          f"best_of_{repeat}={best:.3f}s ({count / best:,.0f} instructions/s)")
    return {"instructions": count, "bytes": len(text), "best_s": best}


if __name__ == "__main__":
    main()
