"""Regenerates the HLO fixtures with JAX (JAX is never needed by the tests).

    python3 -m venv /work/jaxenv && /work/jaxenv/bin/pip install jax jaxlib numpy
    /work/jaxenv/bin/python tests/compiler/hlo/make_fixtures.py

For each program NAME below it writes, into tests/compiler/hlo/fixtures/:

- ``NAME.lowered.hlo``: ``jax.jit(f).lower(*args).as_text(dialect="hlo")`` (pre-optimisation);
- ``NAME.compiled.hlo``: ``.compile().as_text()`` (XLA-optimised: fusions, %-names, metadata);
- ``NAME.npz``: the inputs ``input0..`` in parameter order and JAX's outputs ``output0..``
  (a tuple result flattened in order), as computed by the compiled program.

It also writes ``legacy_*.npz`` for the hand-written older-style fixtures (``legacy_*.hlo``),
whose expected outputs are computed here with numpy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "fixtures"


def programs() -> dict:
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(0)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    # -- an MLP -----------------------------------------------------------------------
    def mlp(x, w1, b1, w2, b2):
        h = jax.nn.gelu(x @ w1 + b1)
        logits = h @ w2 + b2
        return jax.nn.softmax(logits, axis=-1), jnp.argmax(logits, axis=-1)

    # -- a transformer block ------------------------------------------------------------
    heads, d = 2, 16

    def layer_norm(x, g, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * g + b

    def transformer(x, g1, b1, wqkv, wo, g2, b2, w1, w2):
        t = x.shape[0]
        h = layer_norm(x, g1, b1)
        q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
        q = q.reshape(t, heads, d // heads).transpose(1, 0, 2)
        k = k.reshape(t, heads, d // heads).transpose(1, 0, 2)
        v = v.reshape(t, heads, d // heads).transpose(1, 0, 2)
        scores = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(d // heads)
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        scores = jnp.where(mask, scores, -1e9)
        attn = jax.nn.softmax(scores, axis=-1)
        o = jnp.einsum("hqk,hkd->hqd", attn, v).transpose(1, 0, 2).reshape(t, d)
        x = x + o @ wo
        h = layer_norm(x, g2, b2)
        return x + jax.nn.relu(h @ w1) @ w2

    # -- a CNN --------------------------------------------------------------------------
    def cnn(img, k1, k2, w):
        dn = ("NHWC", "HWIO", "NHWC")
        y = lax.conv_general_dilated(img, k1, (1, 1), "SAME", dimension_numbers=dn)
        y = jax.nn.relu(y)
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = lax.conv_general_dilated(y, k2, (2, 2), ((1, 1), (1, 1)), dimension_numbers=dn,
                                     rhs_dilation=(1, 1), feature_group_count=2)
        y = jax.nn.relu(y)
        y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4.0
        return y.reshape(y.shape[0], -1) @ w

    # -- loops --------------------------------------------------------------------------
    def loops(x, w, n):
        y = lax.fori_loop(0, 5, lambda i, y: jnp.tanh(y @ w) + i.astype(jnp.float32), x)

        def cond(s):
            v, i = s
            return (jnp.max(jnp.abs(v)) > 0.01) & (i < n)

        def body(s):
            v, i = s
            return v * 0.5, i + 1

        z, steps = lax.while_loop(cond, body, (y, jnp.int32(0)))
        return z, steps

    # -- conditionals -------------------------------------------------------------------
    def conds(x, k):
        a = lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: jnp.exp(v), x)
        b = lax.switch(k, [lambda v: v + 1.0, lambda v: jnp.sin(v), lambda v: v @ v.T], x)
        return a, b

    # -- indexing, sorting, scans -------------------------------------------------------
    def indexing(x, idx, upd, keys):
        g = x[idx]
        taken = jnp.take_along_axis(x, jnp.argsort(x, axis=1)[:, :2], axis=1)
        s = jnp.zeros((6, 4), jnp.float32).at[idx].add(upd)
        srt = jnp.sort(x, axis=0)
        k2, v2 = lax.sort((keys, x[:, 0]), num_keys=1, is_stable=True)
        return g, taken, s, srt, k2, v2, jnp.cumsum(x, axis=1), jnp.argmax(x, axis=0)

    # -- mixed dtypes -------------------------------------------------------------------
    def mixed(a, b, i, j, u):
        mm = jnp.matmul(a, b, preferred_element_type=jnp.float32)
        mm16 = (a @ b).astype(jnp.bfloat16)
        ints = (i * j + (i // jnp.maximum(j, 1)) - (i % 3)) << 1
        shifted = (u >> 2) ^ u.astype(jnp.uint8)
        cmp = jnp.where((i > j) & (mm[0, 0] > 0), i, j).astype(jnp.float32)
        eq = (i == j) | (i != 0)
        return mm, mm16, ints, shifted, cmp, eq, jnp.abs(i).astype(jnp.int8)

    # -- convolution variants ------------------------------------------------------------
    def convs(x, k, kg, x1, k1):
        dn = ("NCHW", "OIHW", "NCHW")
        a = lax.conv_general_dilated(x, k, (1, 1), "SAME", rhs_dilation=(2, 2),
                                     dimension_numbers=dn)
        b = lax.conv_general_dilated(x, k, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2),
                                     dimension_numbers=dn)
        c = lax.conv_general_dilated(x, kg, (2, 1), "VALID", feature_group_count=2,
                                     dimension_numbers=dn)
        d = lax.conv_general_dilated(x1, k1, (1,), "SAME", dimension_numbers=("NWC", "WIO",
                                                                                 "NWC"))
        e = lax.conv_transpose(x, k, (2, 2), "SAME",
                               dimension_numbers=dn)

        def grouped(w):
            return jnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2,
                                                    dimension_numbers=dn) ** 2)

        return a, b, c, d, e, jax.grad(grouped)(kg)

    bf = jnp.bfloat16
    return {
        "convs": (convs, [f32(2, 4, 6, 6), f32(3, 4, 3, 3) / 3, f32(4, 2, 3, 3) / 3,
                          f32(2, 10, 3), f32(3, 3, 5) / 2]),
        "mlp": (mlp, [f32(4, 8), f32(8, 16), f32(16), f32(16, 5), f32(5)]),
        "transformer": (transformer, [f32(8, d), 1 + 0.1 * f32(d), 0.1 * f32(d),
                                      f32(d, 3 * d) / 4, f32(d, d) / 4, 1 + 0.1 * f32(d),
                                      0.1 * f32(d), f32(d, 32) / 4, f32(32, d) / 6]),
        "cnn": (cnn, [f32(2, 8, 8, 3), f32(3, 3, 3, 4) / 3, f32(3, 3, 2, 6) / 3,
                      f32(6 * 2 * 2, 5) / 5]),
        "loops": (loops, [f32(3, 4) / 2, f32(4, 4) / 2, np.int32(12)]),
        "conds": (conds, [f32(3, 3), np.int32(2)]),
        "indexing": (indexing, [f32(6, 4), np.array([4, 0, 2, 4], np.int32), f32(4, 4),
                                np.array([3, 1, 2, 1, 0, 3], np.int32)]),
        "mixed": (mixed, [np.asarray(f32(4, 8), bf), np.asarray(f32(8, 3), bf),
                          rng.integers(-50, 50, (3, 5)).astype(np.int32),
                          rng.integers(-5, 5, (3, 5)).astype(np.int32),
                          rng.integers(0, 2**31, (3, 5)).astype(np.uint32)]),
    }


def rng_program() -> tuple:
    """rng-bit-generator with each algorithm, several shapes and widths (u64 needs x64)."""
    import jax.numpy as jnp
    from jax import lax

    algs = lax.RandomAlgorithm
    cases = [(algs.RNG_THREE_FRY, (3, 5), jnp.uint32), (algs.RNG_THREE_FRY, (4,), jnp.uint64),
             (algs.RNG_THREE_FRY, (2, 3), jnp.uint8), (algs.RNG_THREE_FRY, (), jnp.uint32),
             (algs.RNG_PHILOX, (5,), jnp.uint32), (algs.RNG_PHILOX, (3,), jnp.uint64),
             (algs.RNG_DEFAULT, (2, 3), jnp.uint16)]

    def rng(key):
        outs = []
        for alg, shape, dt in cases:
            new_key, bits = lax.rng_bit_generator(key, shape, dtype=dt, algorithm=alg)
            outs += [new_key, bits]
        return tuple(outs)

    return rng, [np.array([1, 2, 0xFFFFFFFF, 4], np.uint32)]


def wide_program() -> tuple:
    """f64, s64, f16 and s16 arithmetic (64-bit types need x64)."""
    import jax.numpy as jnp

    def wide(a, b, i, j, h):
        ints = i * j + (i // 3) - (j % 7)
        return (a @ b, jnp.sum(a * 1e-3, axis=0), ints, (h * h + h).astype(jnp.float16),
                h.astype(jnp.int16) * 3, i > j, jnp.exp(a).astype(jnp.float32))

    rng = np.random.default_rng(2)
    return wide, [rng.standard_normal((3, 4)), rng.standard_normal((4, 2)),
                  rng.integers(-2**40, 2**40, 5), rng.integers(-100, 100, 5),
                  rng.standard_normal(6).astype(np.float16)]


def write_jax_fixtures() -> None:
    import jax

    later = [("rng", rng_program), ("wide", wide_program)]
    for name, program in [*programs().items(), *later]:
        if callable(program):  # last: 64-bit types need x64, which would change the others
            jax.config.update("jax_enable_x64", True)
            program = program()
        fn, args = program
        jitted = jax.jit(fn)
        lowered = jitted.lower(*args)
        compiled = lowered.compile()
        (OUT / f"{name}.lowered.hlo").write_text(lowered.as_text(dialect="hlo"))
        (OUT / f"{name}.compiled.hlo").write_text(compiled.as_text())
        outs = jax.tree_util.tree_leaves(compiled(*args))
        arrays = {f"input{i}": np.asarray(a) for i, a in enumerate(args)}
        arrays.update({f"output{i}": np.asarray(o) for i, o in enumerate(outs)})
        save(name, arrays)
        print(f"{name}: {len(args)} inputs, {len(outs)} outputs")


def save(name: str, arrays: dict[str, np.ndarray]) -> None:
    """npz cannot hold bfloat16: such arrays are stored as uint16 bits under 'bf16:' keys."""
    stored = {}
    for key, arr in arrays.items():
        if arr.dtype.name == "bfloat16":
            stored[f"bf16:{key}"] = arr.view(np.uint16)
        else:
            stored[key] = arr
    np.savez(OUT / f"{name}.npz", **stored)


def write_legacy_fixtures() -> None:
    """Expected outputs of the hand-written legacy_*.hlo, computed with numpy."""
    rng = np.random.default_rng(1)
    # legacy_layouts.hlo: bitcasts through non-default layouts, an old-style constant,
    # operand shapes, tuple parameter, /*index=N*/ comments.
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((3, 2)).astype(np.float32)
    c = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    # %t = f32[2,3]{0,1} copy(x): same logical values, column-major storage.
    # %b = f32[3,2]{1,0} bitcast(%t): reinterprets the column-major buffer as row-major
    # [3,2], i.e. x.T.
    b = x.T
    s = x + c
    d = s @ y
    w = np.concatenate([d, b.T @ b[:, :2]], axis=1)
    save("legacy_layouts", {"input0": x, "input1": y, "output0": b, "output1": w,
                            "output2": np.float32(d.sum())})
    # legacy_while.hlo: a tuple-shaped parameter (inputs p.0, p.1), a while over a tuple,
    # the two-branch conditional, an old-style dynamic-slice with a vector index.
    i0 = np.int32(1)
    v0 = rng.standard_normal(4).astype(np.float32)
    m = rng.standard_normal((2, 2)).astype(np.float32)
    v, i = v0.copy(), int(i0)
    while i < 3:
        v = v * v + np.float32(i)
        i += 1
    c = -m if i0 > 0 else m.T
    save("legacy_while", {"input0": i0, "input1": v0, "input2": m, "output0": v,
                          "output1": c, "output2": v[1:3]})


def main() -> None:
    OUT.mkdir(exist_ok=True)
    if "--legacy-only" not in sys.argv:
        write_jax_fixtures()
    write_legacy_fixtures()


if __name__ == "__main__":
    main()
