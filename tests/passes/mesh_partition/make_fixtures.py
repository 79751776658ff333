"""Regenerates the SPMD fixtures with JAX on 8 simulated CPU devices (JAX is never needed by
the tests).

    /work/jaxvenv/bin/python tests/passes/mesh_partition/make_fixtures.py

For each program NAME below it writes, into tests/passes/mesh_partition/fixtures/:

- ``NAME.lowered.hlo``: ``jax.jit(f, in_shardings=..., out_shardings=...).lower(*args)
  .as_text(dialect="hlo")``: the global program, its parameters and root carrying
  ``sharding=`` annotations;
- ``NAME.lowered.mlir``: the same program as StableHLO (``.as_text()``), its arguments
  carrying ``sdy.sharding`` (Shardy) over the module's ``sdy.mesh``;
- ``NAME.compiled.hlo``: ``.compile().as_text()``: the partitioned per-device program
  (``num_partitions=8``, collectives with replica groups, parameters at per-device shapes);
- ``NAME.npz``: the global inputs ``input0..`` in parameter order and JAX's global outputs
  ``output0..``;
- ``NAME.json``: the mesh, and the HLO text of each input's and output's sharding (what
  ``neuronx-cc run --output-sharding`` is given for the compiled program, whose root carries
  none).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "fixtures"
DEVICES = 8


def programs() -> dict:
    """NAME -> (function, mesh shape, mesh axis names, input specs, output spec, inputs)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    rng = np.random.default_rng(0)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def megatron_mlp(x, w1, b1, w2, b2):
        # column-parallel first matmul, row-parallel second: one all-reduce over tp
        h = jax.nn.gelu(x @ w1 + b1)
        return h @ w2 + b2

    def row_sum(x):
        return jnp.sum(x, axis=1)

    def contraction_matmul(a, b):
        return a @ b

    def attention(x, wqkv, wo):
        # fused QKV weight split by columns over tp: heads end up split four ways
        b, s, d = x.shape
        heads = 4
        qkv = (x @ wqkv).reshape(b, s, 3, heads, d // heads)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // heads)
        probs = jax.nn.softmax(scores, axis=-1)
        ctx = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
        return ctx @ wo

    mesh = Mesh(np.array(jax.devices()[:DEVICES]).reshape(2, 4), ("dp", "tp"))

    def constrained_mlp(x, w1, w2):
        # a sharding constraint (HLO's Sharding custom-call) mid-program: the hidden
        # activation by columns over tp, whole rows
        h = jax.lax.with_sharding_constraint(jnp.tanh(x @ w1),
                                             NamedSharding(mesh, P(None, "tp")))
        return h @ w2

    def mlp_loss(params, x, y):
        w1, w2 = params
        h = jnp.tanh(x @ w1)
        return jnp.mean((h @ w2 - y) ** 2)

    def train_step(w1, w2, x, y):
        # one SGD step; data parallel or FSDP depending on the shardings given
        loss, (g1, g2) = jax.value_and_grad(mlp_loss)((w1, w2), x, y)
        return w1 - 0.1 * g1, w2 - 0.1 * g2, loss

    return {
        "dp_train_step": (train_step, (8,), ("dp",),
                          (P(), P(), P("dp", None), P("dp", None)), (P(), P(), P()),
                          (f32(16, 32) * 0.3, f32(32, 8) * 0.3, f32(16, 16), f32(16, 8))),
        "fsdp_train_step": (train_step, (8,), ("dp",),
                            (P("dp", None), P("dp", None), P("dp", None), P("dp", None)),
                            (P("dp", None), P("dp", None), P()),
                            (f32(16, 32) * 0.3, f32(32, 8) * 0.3, f32(16, 16), f32(16, 8))),
        "attention_qkv": (attention, (2, 4), ("dp", "tp"),
                          (P("dp", None, None), P(None, "tp"), P("tp", None)),
                          P("dp", None, None),
                          (f32(4, 8, 32), f32(32, 96) * 0.2, f32(32, 32) * 0.2)),
        "megatron_mlp": (megatron_mlp, (2, 4), ("dp", "tp"),
                         (P("dp", None), P(None, "tp"), P("tp"), P("tp", None), P(None)),
                         P("dp", None),
                         (f32(8, 16), f32(16, 32), f32(32), f32(32, 16), f32(16))),
        "row_sum": (row_sum, (2, 4), ("dp", "tp"), (P("dp", "tp"),), P("dp"),
                    (f32(8, 32),)),
        "contraction_matmul": (contraction_matmul, (8,), ("k",),
                               (P(None, "k"), P("k", None)), P(),
                               (f32(4, 64), f32(64, 8))),
        "constrained_mlp": (constrained_mlp, (2, 4), ("dp", "tp"), (P("dp", None), P(), P()),
                            P("dp", None), (f32(8, 16), f32(16, 32) * 0.3, f32(32, 16) * 0.3)),
    }


def hlo_text(sharding, ndim: int) -> str:
    """A NamedSharding in HLO sharding syntax."""
    return str(sharding._to_xla_hlo_sharding(ndim))


def main() -> None:
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    import jax
    from jax.sharding import Mesh, NamedSharding

    OUT.mkdir(exist_ok=True)
    devices = np.array(jax.devices()[:DEVICES])
    for name, (f, mesh_shape, axes, in_specs, out_spec, args) in programs().items():
        mesh = Mesh(devices.reshape(mesh_shape), axes)
        in_shardings = tuple(NamedSharding(mesh, s) for s in in_specs)
        out_specs = out_spec if isinstance(out_spec, tuple) else (out_spec,)
        out_shardings = tuple(NamedSharding(mesh, s) for s in out_specs)
        jitted = jax.jit(f, in_shardings=in_shardings,
                         out_shardings=out_shardings if isinstance(out_spec, tuple)
                         else out_shardings[0])
        lowered = jitted.lower(*args)
        compiled = lowered.compile()
        (OUT / f"{name}.lowered.hlo").write_text(lowered.as_text(dialect="hlo"))
        (OUT / f"{name}.lowered.mlir").write_text(lowered.as_text())
        (OUT / f"{name}.compiled.hlo").write_text(compiled.as_text())
        placed = [jax.device_put(a, s) for a, s in zip(args, in_shardings, strict=True)]
        out = compiled(*placed)
        outs = out if isinstance(out, tuple | list) else (out,)
        arrays = {f"input{i}": np.asarray(a) for i, a in enumerate(args)}
        arrays.update({f"output{i}": np.asarray(o) for i, o in enumerate(outs)})
        np.savez(OUT / f"{name}.npz", **arrays)
        meta = {"mesh": dict(zip(axes, mesh_shape, strict=True)),
                "input_shardings": [hlo_text(s, a.ndim)
                                    for s, a in zip(in_shardings, args, strict=True)],
                "output_shardings": [hlo_text(s, np.ndim(o))
                                     for s, o in zip(out_shardings, outs, strict=True)]}
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"wrote {name}: {len(args)} inputs, {len(outs)} outputs")


if __name__ == "__main__":
    main()
