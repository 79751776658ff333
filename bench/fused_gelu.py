"""GPT-2's GELU (tanh form, with its bias broadcast) on f32[1,128,3072], or BERT's (erf
form, `--erf`): the ops one by one, each into a fresh array (the interpreter; the executor
ran them in planned buffers, a little cheaper) against the `fused_elementwise` op the fuse
pass makes of them, interleaved in one process.

    PYTHONPATH=. python bench/fused_gelu.py [--erf] [--results DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from result_files import add_results_argument, recording

from nxcc.ir.interpreter import IRContext
from nxcc.ir.kernels.fused import prepare_fused
from nxcc.ir.parser import parse_module
from nxcc.passes.fusion.elementwise import FuseElementwise

S = "1,128,3072"
TEXT = f"""
module @m {{
  func @main(%x: f32[{S}], %b: f32[3072]) -> (f32[{S}]) {{
    %bb = broadcast_in_dim(%b) {{shape = [1, 128, 3072], broadcast_dimensions = [2]}} : f32[{S}]
    %h = add(%x, %bb) : f32[{S}]
    %three = constant() {{value = splat<f32[{S}]: 3.0>}} : f32[{S}]
    %p = power(%h, %three) : f32[{S}]
    %k = constant() {{value = splat<f32[{S}]: 0.044715>}} : f32[{S}]
    %c = multiply(%p, %k) : f32[{S}]
    %s = add(%h, %c) : f32[{S}]
    %r = constant() {{value = splat<f32[{S}]: 0.7978846>}} : f32[{S}]
    %u = multiply(%s, %r) : f32[{S}]
    %t = tanh(%u) : f32[{S}]
    %one = constant() {{value = splat<f32[{S}]: 1.0>}} : f32[{S}]
    %a = add(%t, %one) : f32[{S}]
    %half = constant() {{value = splat<f32[{S}]: 0.5>}} : f32[{S}]
    %hh = multiply(%h, %half) : f32[{S}]
    %y = multiply(%hh, %a) : f32[{S}]
    return %y
  }}
}}"""

ERF_TEXT = f"""
module @m {{
  func @main(%x: f32[{S}], %b: f32[3072]) -> (f32[{S}]) {{
    %bb = broadcast_in_dim(%b) {{shape = [1, 128, 3072], broadcast_dimensions = [2]}} : f32[{S}]
    %h = add(%x, %bb) : f32[{S}]
    %r2 = constant() {{value = splat<f32[{S}]: 1.4142135>}} : f32[{S}]
    %d = divide(%h, %r2) : f32[{S}]
    %e = erf(%d) : f32[{S}]
    %one = constant() {{value = splat<f32[{S}]: 1.0>}} : f32[{S}]
    %a = add(%e, %one) : f32[{S}]
    %m = multiply(%h, %a) : f32[{S}]
    %half = constant() {{value = splat<f32[{S}]: 0.5>}} : f32[{S}]
    %y = multiply(%m, %half) : f32[{S}]
    return %y
  }}
}}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--erf", action="store_true", help="BERT's erf form (default: tanh)")
    add_results_argument(parser)
    args = parser.parse_args()
    form = "erf" if args.erf else "tanh"
    with recording(f"fused_gelu-{form}", f"GELU ({form} form): unfused ops against fused",
                   args.results) as rec:
        rec.data["ms"] = compare(ERF_TEXT if args.erf else TEXT, form)


def compare(text: str, form: str) -> dict[str, dict[str, float]]:
    """Time the unfused ops against the fused op, interleaved; print and return medians and
    bests (ms)."""
    plain, fused = parse_module(text), parse_module(text)
    FuseElementwise().run(fused)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 128, 3072)).astype(np.float32)
    b = rng.standard_normal(3072).astype(np.float32)
    fn = fused.entry_function
    env = {id(fn.params[0]): x, id(fn.params[1]): b}
    env.update({id(o.result): o.attrs["value"].array for o in fn.body  # type: ignore[union-attr]
                if o.opcode == "constant"})
    op = next(o for o in fn.body if o.opcode == "fused_elementwise")
    out = np.empty_like(x)
    run = prepare_fused([env[id(v)] for v in op.operands], out, op.attrs)
    times: dict[str, list[float]] = {"unfused ops": [], "fused": []}
    with np.errstate(all="ignore"):
        for _ in range(7):
            for name, step in (("unfused ops", lambda: IRContext(plain).call("main", [x, b])),
                               ("fused", run)):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
        want = IRContext(plain).call("main", [x, b])[0]
    for name, ts in times.items():
        print(f"GELU({form}) f32[1,128,3072] {name:12} median {statistics.median(ts) * 1e3:7.2f} "
              f"ms  best {min(ts) * 1e3:7.2f} ms")
    print("largest difference in ulps:",
          int(np.max(np.abs(out.view(np.int32) - want.view(np.int32)))))
    return {name: {"median": statistics.median(ts) * 1e3, "best": min(ts) * 1e3}
            for name, ts in times.items()}


if __name__ == "__main__":
    main()
