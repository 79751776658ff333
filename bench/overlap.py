"""Benchmark: communication overlapped with compute on a training-like SPMD program.

    python bench/overlap.py [--ranks 4] [--layers 8] [--size 384] [--repeat 15]

The program is a chain of layers, each computing an activation and a gradient-like product
whose all-reduce over the ranks the next layers do not wait for (as data-parallel training
reduces each layer's gradients while the backward pass goes on). Four variants of it run as
`--ranks` ranks in one process (simulated inf2.48xlarge: any even, consecutive rank count),
each the median of `--repeat` executions after a warm-up:

- compute alone: the same layers, no all-reduce;
- communication alone: only the all-reduces, of the same sizes;
- synchronous: the full program compiled without the latency-hiding pass;
- overlapped: the full program as nxcc compiles it (latency-hiding splits each all-reduce
  into a start placed after its operand and a done placed before its first use).

Prints one line per variant and whether overlapped < compute + communication.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.backend.runtime.nrt import Runtime  # noqa: E402
from nxcc.driver.compile import compile_model  # noqa: E402
from nxcc.driver.options import CompileOptions  # noqa: E402
from nxcc.passes import registry  # noqa: E402

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


def program(ranks: int, layers: int, size: int, compute: bool, reduce: bool) -> str:
    """HLO text of the chain (see the module docstring)."""
    t = f"f32[{size},{size}]{{1,0}}"
    lines = [f"  h0 = {t} parameter(0)"]
    lines += [f"  w{i} = {t} parameter({i + 1})" for i in range(layers)]
    outs = []
    for i in range(layers):
        if compute:
            lines.append(f"  d{i} = {t} dot(h{i}, w{i}), lhs_contracting_dims={{1}}, "
                         "rhs_contracting_dims={0}")
            lines.append(f"  h{i + 1} = {t} tanh(d{i})")
            lines.append(f"  g{i} = {t} dot(h{i}, h{i + 1}), lhs_contracting_dims={{0}}, "
                         "rhs_contracting_dims={0}")
            grad = f"g{i}"
        else:
            grad = f"w{i}"
        if reduce:
            lines.append(f"  r{i} = {t} all-reduce({grad}), channel_id={i + 1}, "
                         f"replica_groups={{{{{','.join(map(str, range(ranks)))}}}}}, "
                         "to_apply=add")
            outs.append(f"r{i}")
        else:
            outs.append(grad)
    shapes = ", ".join([t] * len(outs))
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(outs)})")
    return (f"HloModule chain, num_partitions={ranks}\n\n{ADD}\nENTRY main {{\n"
            + "\n".join(lines) + "\n}\n")


def compile_variant(text: str, out: Path, hide_latency: bool) -> Path:
    src = out.with_suffix(".hlo")
    src.write_text(text)
    saved = dict(registry.PIPELINES)
    try:
        if not hide_latency:
            for level, pipeline in saved.items():
                registry.PIPELINES[level] = ",".join(
                    p for p in pipeline.split(",") if p != "latency-hiding")
        compile_model(str(src), CompileOptions(target="inf2", output=str(out)),
                      emit=lambda s: None)
    finally:
        registry.PIPELINES.clear()
        registry.PIPELINES.update(saved)
    return out


def time_variant(neff: Path, ranks: int, layers: int, size: int, repeat: int) -> float:
    """Median seconds of one execution as `ranks` ranks."""
    rng = np.random.default_rng(0)
    rt = Runtime().init(target="inf2")
    try:
        model = rt.load_spmd(neff, ranks)
        inputs = {i.name: (rng.standard_normal(i.shape) * 0.05).astype(np.float32)
                  for i in model.inputs}
        rt.execute(model, inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            rt.execute(model, inputs)
            times.append(time.perf_counter() - t0)
    finally:
        rt.close()
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=15)
    add_results_argument(ap)
    args = ap.parse_args()
    with recording("overlap", "Collectives overlapped with compute", args.results) as rec:
        rec.data["ms"] = variants_ms(args)


def variants_ms(args: argparse.Namespace) -> dict[str, float]:
    """Each variant's median milliseconds per step; printed as measured."""
    os.environ.setdefault("NXCC_INSTANCE_TYPE", "inf2.48xlarge")
    variants = {
        "compute alone": (True, False, True),
        "communication alone": (False, True, True),
        "synchronous": (True, True, False),
        "overlapped": (True, True, True),
    }
    ms = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (compute, reduce, hide) in variants.items():
            text = program(args.ranks, args.layers, args.size, compute, reduce)
            neff = compile_variant(text, Path(tmp) / f"{name.replace(' ', '_')}.neff", hide)
            ms[name] = 1e3 * time_variant(neff, args.ranks, args.layers, args.size,
                                          args.repeat)
            print(f"{name:20s} {ms[name]:8.1f} ms")
    total = ms["compute alone"] + ms["communication alone"]
    print(f"compute + communication {total:.1f} ms; overlapped {ms['overlapped']:.1f} ms "
          f"({'below' if ms['overlapped'] < total else 'NOT below'} the sum; synchronous "
          f"{ms['synchronous']:.1f} ms)")
    return ms


if __name__ == "__main__":
    main()
