"""Regenerates the StableHLO fixtures with JAX (JAX is never needed by the tests).

    /work/jaxvenv/bin/python tests/compiler/stablehlo/make_fixtures.py [NAME ...]

For each program NAME (those of tests/compiler/hlo/make_fixtures.py and tests/passes/mesh_partition/make_fixtures.py,
and the programs below: a scanned layer stack, cond/switch, sort/argsort, top_k, a helper
called twice, a program sharded over a mesh) it writes, into tests/compiler/stablehlo/fixtures/:

- ``NAME.mlir``: ``jax.jit(f).lower(*args).as_text()`` (StableHLO, JAX's default text);
- ``NAME.hlo``: ``.as_text(dialect="hlo")`` of the same lowering;
- ``NAME.npz``: the inputs ``input0..`` and JAX's outputs ``output0..`` (bfloat16 arrays as
  uint16 bits under ``bf16:`` keys, as tests/compiler/hlo stores them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
OUT = Path(__file__).resolve().parent / "fixtures"
DEVICES = 8


def extra_programs() -> dict:
    """NAME -> (function, inputs) of the programs only this fixture set has."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(3)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def scan_layers(x, ws, bs):
        def layer(h, wb):
            w, b = wb
            h = jnp.tanh(h @ w + b)
            return h, jnp.sum(h)

        return lax.scan(layer, x, (ws, bs))

    def cond_switch(x, k):
        a = lax.cond(x[0, 0] > 0, lambda v: v * 3.0, lambda v: jnp.cos(v), x)
        b = lax.switch(k, [lambda v: v - 1.0, lambda v: jnp.exp(v), lambda v: v @ v,
                           lambda v: -v], x)
        return a, b

    def sorting(x, keys):
        return (jnp.sort(x, axis=-1), jnp.argsort(x, axis=0), jnp.sort(keys),
                jnp.argsort(keys, stable=True), jnp.sort(x[:, 0], descending=True))

    def top_k(x):
        v, i = lax.top_k(x, 3)
        return v, i

    @jax.jit
    def helper(a, b):
        return jnp.tanh(a @ b) + 1.0

    helper_not_inlined = jax.jit(lambda a, b: jnp.tanh(a @ b) + 1.0, inline=False)

    def called_twice(x, w):
        return helper_not_inlined(helper_not_inlined(x, w), w) + helper(x, w)

    def misc(x, y, i):
        ce = lax.erf(jnp.clip(x * 0.3, -0.9, 0.9))
        lg = lax.tan(x * 0.5)
        barrier = lax.optimization_barrier((x, y))
        dyn = lax.dynamic_slice(x, (i, 0), (2, 4))
        upd = lax.dynamic_update_slice(x, y[:2], (i, 1))
        return (ce, lg, barrier[0] + barrier[1], dyn, upd, jnp.pad(x, ((1, 0), (0, 2))),
                jnp.concatenate([x, y], axis=0), jnp.flip(x, 1), x.T,
                jnp.clip(x, -0.5, 0.5), jnp.round(x), jnp.logical_not(x > 0),
                jnp.remainder(x, 0.7), jnp.expm1(x), jnp.log1p(jnp.abs(x)),
                lax.population_count(i), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1))

    return {
        "chlo_math": chlo_program(np.float32),
        "scan_layers": (scan_layers, [f32(4, 8), f32(3, 8, 8) / 3, f32(3, 8) / 4]),
        "cond_switch": (cond_switch, [f32(3, 3), np.int32(2)]),
        "sorting": (sorting, [f32(5, 6), np.array([3, 1, 2, 1, 0, 3, 7], np.int32)]),
        "top_k": (top_k, [f32(4, 10)]),
        "called_twice": (called_twice, [f32(4, 4), f32(4, 4) / 2]),
        "misc": (misc, [f32(4, 4), f32(4, 4), np.int32(1)]),
    }


def chlo_program(dtype: type) -> tuple:
    """The CHLO ops JAX prints with no HLO opcode (chlo.square, erfc, erf_inv, sinh, cosh,
    asin, acos, atan, asinh, acosh, atanh, next_after, lgamma, digamma), on edge values
    too."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5)).astype(dtype)
    u = rng.uniform(-1, 1, (6, 5)).astype(dtype)
    u[0, :3] = (-1.0, 1.0, 0.0)
    edges = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30, 3.5], dtype)

    def chlo_math(x, u, edges):
        p = jnp.abs(x) + 0.1
        return (jnp.square(x), x.var(0), jax.nn.gelu(x, approximate=False), lax.erfc(x * 3),
                lax.erfc(edges), lax.erf_inv(u), jnp.sinh(x * 4), jnp.cosh(x * 4),
                jnp.arcsin(jnp.tanh(x)), jnp.arccos(jnp.tanh(x)), jnp.arctan(x * 3),
                jnp.arcsinh(x * 5), jnp.arcsinh(edges), jnp.arccosh(p + 1),
                jnp.arctanh(jnp.tanh(x) * 0.99), jnp.nextafter(x, p), jnp.nextafter(edges, u[0, :1]),
                jnp.isinf(edges), jnp.isposinf(edges), jnp.isneginf(edges),
                jax.scipy.special.gammaln(x * 3), jax.scipy.special.gammaln(p * 40),
                jax.scipy.special.digamma(x * 3), jax.scipy.special.gammaln(edges),
                jax.scipy.special.digamma(edges))

    return chlo_math, [x, u, edges]


def save(name: str, arrays: dict[str, np.ndarray]) -> None:
    """npz cannot hold bfloat16: such arrays are stored as uint16 bits under 'bf16:' keys."""
    stored = {}
    for key, arr in arrays.items():
        if arr.dtype.name == "bfloat16":
            stored[f"bf16:{key}"] = arr.view(np.uint16)
        else:
            stored[key] = arr
    np.savez(OUT / f"{name}.npz", **stored)


#: Programs also written in the other printed forms: ``NAME_locs.mlir`` with locations
#: (``as_text(debug_info=True)``) and ``NAME_generic.mlir`` in MLIR's generic op form.
OTHER_FORMS = ("mlp", "scan_layers", "cond_switch", "sorting", "indexing", "convs")


def write(name: str, lowered, compiled, args, outs) -> None:
    import jax

    (OUT / f"{name}.mlir").write_text(lowered.as_text())
    forms = {}
    if name in OTHER_FORMS:
        forms[f"{name}_locs"] = lowered.as_text(debug_info=True)
        forms[f"{name}_generic"] = lowered.compiler_ir("stablehlo").operation.get_asm(
            print_generic_op_form=True)
    for other, text in forms.items():
        (OUT / f"{other}.mlir").write_text(text)
        (OUT / f"{other}.hlo").write_text(lowered.as_text(dialect="hlo"))
    (OUT / f"{name}.hlo").write_text(lowered.as_text(dialect="hlo"))
    leaves = jax.tree_util.tree_leaves(outs)
    arrays = {f"input{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"output{i}": np.asarray(o) for i, o in enumerate(leaves)})
    for n in (name, *forms):
        save(n, arrays)
    print(f"{name}: {len(args)} inputs, {len(leaves)} outputs")


def write_plain(name: str, fn, args) -> None:
    import jax

    lowered = jax.jit(fn).lower(*args)
    compiled = lowered.compile()
    write(name, lowered, compiled, args, compiled(*args))


def write_sharded(prefix: str, shardy: bool) -> None:
    """The SPMD programs: global text with their argument shardings as ``mhlo.sharding``
    (GSPMD), or with Shardy on as ``sdy.sharding`` and an ``sdy.mesh``."""
    import jax
    from jax.sharding import Mesh, NamedSharding

    from tests.passes.mesh_partition import make_fixtures as spmd

    jax.config.update("jax_use_shardy_partitioner", shardy)
    devices = np.array(jax.devices()[:DEVICES])
    for name, (f, mesh_shape, axes, in_specs, out_spec, args) in spmd.programs().items():
        if shardy and name != "megatron_mlp":
            continue
        mesh = Mesh(devices.reshape(mesh_shape), axes)
        in_shardings = tuple(NamedSharding(mesh, s) for s in in_specs)
        jitted = jax.jit(f, in_shardings=in_shardings,
                         out_shardings=NamedSharding(mesh, out_spec))
        lowered = jitted.lower(*args)
        compiled = lowered.compile()
        placed = [jax.device_put(a, s) for a, s in zip(args, in_shardings, strict=True)]
        write(f"{prefix}_{name}", lowered, compiled, args, compiled(*placed))


def main() -> None:
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    sys.path.insert(0, str(ROOT))
    import jax

    from tests.compiler.hlo import make_fixtures as hlo

    only = set(sys.argv[1:])  # program names: write just those (default: every one)
    OUT.mkdir(exist_ok=True)
    for name, (fn, args) in {**hlo.programs(), **extra_programs()}.items():
        if not only or name in only:
            write_plain(name, fn, args)
    if not only:
        write_sharded("sharded", shardy=False)
        write_sharded("sdy", shardy=True)
    jax.config.update("jax_enable_x64", True)  # last: 64-bit types change the others
    for name, program in (("rng", hlo.rng_program), ("wide", hlo.wide_program),
                          ("chlo_math_f64", lambda: chlo_program(np.float64))):
        if not only or name in only:
            fn, args = program()
            write_plain(name, fn, args)


if __name__ == "__main__":
    main()
