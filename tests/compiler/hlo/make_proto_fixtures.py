"""Regenerates the binary HloModuleProto fixtures with JAX (the tests never need JAX).

    /work/jaxvenv/bin/python tests/compiler/hlo/make_proto_fixtures.py      (the stored ones: jax 0.10.2)

For each program NAME (those of `make_fixtures.py` and `tests/passes/mesh_partition/make_fixtures.py`, and
a few more: softmax, layer norm, attention, a scan, top-k, a max-pool gradient
(select-and-scatter), constants of every element type) it writes into
tests/compiler/hlo/fixtures/proto/:

- ``NAME.lowered.hlo.pb``: ``jax.jit(f).lower(*args).compiler_ir("hlo")
  .as_serialized_hlo_module_proto()``, what a build pipeline hands to neuronx-cc, and
  ``NAME.lowered.hlo``, the same module as HLO text (``as_hlo_text()``);
- ``NAME.compiled.hlo.pb`` and ``NAME.compiled.hlo``: the XLA-optimised module
  (``.compile().runtime_executable().hlo_modules()[0]``; fusions, layouts, and for the SPMD
  programs the per-device program with its collectives), except for `LOWERED_ONLY`;
- ``NAME.npz``: the inputs ``input0..`` and JAX's outputs ``output0..`` (bfloat16 arrays as
  uint16 bits under ``bf16:`` keys, as `make_fixtures.save` stores them);
- ``NAME.json`` for the SPMD programs: the HLO sharding of each output (what
  ``neuronx-cc run --output-sharding`` is given for the partitioned program).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
OUT = Path(__file__).resolve().parent / "fixtures" / "proto"
DEVICES = 8
#: Programs whose optimised form is not kept (rng's is 300 kB of unrolled rounds).
LOWERED_ONLY = {"rng"}


def extra_programs() -> dict:
    """Programs the text fixtures do not have, for the forms a proto takes."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(3)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def softmax(x):
        return jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0)

    def layer_norm(x, g, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-6) * g + b

    def attention(q, k, v):
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
        mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
        p = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), axis=-1)
        return jnp.einsum("bhqk,bkhd->bqhd", p, v)

    def scan(xs, w, h0):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h)

        return lax.scan(step, h0, xs)

    def topk(x):
        return lax.top_k(x, 3)

    def pool_grad(x):
        def pool(y):
            return jnp.sum(lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1),
                                             (1, 2, 2, 1), "VALID") ** 2)

        return jax.grad(pool)(x)

    return {
        "softmax": (softmax, [f32(4, 10)]),
        "layer_norm": (layer_norm, [f32(6, 16), 1 + 0.1 * f32(16), 0.1 * f32(16)]),
        "attention": (attention, [f32(2, 5, 2, 8), f32(2, 5, 2, 8), f32(2, 5, 2, 8)]),
        "scan": (scan, [f32(7, 3, 4), f32(4, 4) / 2, f32(3, 4)]),
        "topk": (topk, [f32(3, 9)]),
        "pool_grad": (pool_grad, [f32(2, 6, 6, 3)]),
    }


def literals_program() -> tuple:
    """Constants of every element type the IR has (x64: s64, u64, f64), so each packed
    literal field of the proto is read: pred, s8, u8, s16, u16, f16, bf16, s32, u32, f32..."""
    import jax.numpy as jnp

    types = [jnp.bool_, jnp.int8, jnp.uint8, jnp.int16, jnp.uint16, jnp.float16,
             jnp.bfloat16, jnp.int32, jnp.uint32, jnp.float32, jnp.int64, jnp.uint64,
             jnp.float64]
    base = np.array([[0, 1, 2], [3, 5, 7]])
    consts = [np.asarray(base * (i + 1) % 9 - (0 if np.dtype(t).kind in "ub" else 3), t)
              for i, t in enumerate(types)]

    def literals(x):
        outs = []
        for c in consts:
            c = jnp.asarray(c)
            outs.append(c if c.dtype == jnp.bool_ else c + x.astype(c.dtype))
        return tuple(outs)

    return literals, [np.array([[1, 2, 3], [4, 5, 6]], np.int32)]


def write(name: str, lowered, compiled, args, outs, meta: dict | None = None) -> None:
    (OUT / f"{name}.lowered.hlo.pb").write_bytes(
        lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
    (OUT / f"{name}.lowered.hlo").write_text(lowered.compiler_ir("hlo").as_hlo_text())
    if name not in LOWERED_ONLY:
        module = compiled.runtime_executable().hlo_modules()[0]
        (OUT / f"{name}.compiled.hlo.pb").write_bytes(module.as_serialized_hlo_module_proto())
        (OUT / f"{name}.compiled.hlo").write_text(compiled.as_text())
    arrays = {f"input{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"output{i}": np.asarray(o) for i, o in enumerate(outs)})
    stored = {(f"bf16:{k}" if a.dtype.name == "bfloat16" else k):
              (a.view(np.uint16) if a.dtype.name == "bfloat16" else a)
              for k, a in arrays.items()}
    np.savez(OUT / f"{name}.npz", **stored)
    if meta is not None:
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{name}: {len(args)} inputs, {len(outs)} outputs")


def write_single_device(programs: dict) -> None:
    import jax

    for name, (fn, args) in programs.items():
        lowered = jax.jit(fn).lower(*args)
        compiled = lowered.compile()
        write(name, lowered, compiled, args, jax.tree_util.tree_leaves(compiled(*args)))


def write_spmd() -> None:
    import jax
    from jax.sharding import Mesh, NamedSharding

    from tests.passes.mesh_partition.make_fixtures import hlo_text
    from tests.passes.mesh_partition.make_fixtures import programs as spmd_programs

    devices = np.array(jax.devices()[:DEVICES])
    for name, (f, mesh_shape, axes, in_specs, out_spec, args) in spmd_programs().items():
        mesh = Mesh(devices.reshape(mesh_shape), axes)
        ins = tuple(NamedSharding(mesh, s) for s in in_specs)
        out = NamedSharding(mesh, out_spec)
        lowered = jax.jit(f, in_shardings=ins, out_shardings=out).lower(*args)
        compiled = lowered.compile()
        placed = [jax.device_put(a, s) for a, s in zip(args, ins, strict=True)]
        outs = jax.tree_util.tree_leaves(compiled(*placed))
        meta = {"output_shardings": [hlo_text(out, np.ndim(o)) for o in outs]}
        write(name, lowered, compiled, args, outs, meta)


def main() -> None:
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    sys.path.insert(0, str(ROOT))
    import jax

    from tests.compiler.hlo.make_fixtures import programs, rng_program, wide_program

    OUT.mkdir(parents=True, exist_ok=True)
    write_single_device({**programs(), **extra_programs()})
    write_spmd()
    jax.config.update("jax_enable_x64", True)  # last: 64-bit types change the others
    write_single_device({"rng": rng_program(), "wide": wide_program(),
                         "literals": literals_program()})


if __name__ == "__main__":
    main()
