"""Regenerate the JAX training-step fixtures in tests/e2e/data/ (needs JAX; the tests do
not).

    /work/jaxvenv/bin/python tests/e2e/make_jax_reference.py

``jax_adam``: a 2-layer MLP (8 -> 16 tanh -> 4) with a mean-squared-error loss and Adam written in JAX
(lr 1e-2, betas 0.9/0.999, eps 1e-8, bias-corrected), one step jitted with its parameters,
moments and step counter donated (so the HLO header carries input_output_alias). Stored:
the lowered and compiled HLO text, ``jax_adam_args.npz`` (the step's arguments in
parameter order, ``arg0`` ...), and ``jax_adam_reference.npz`` (``losses`` of 10 steps and
the parameters after them, ``param0`` ...).

``jax_cnn``: the same Adam on a model whose gradients bring the ops of a JAX training step:
an embedding lookup (gather; its gradient a scatter-add), a convolution, max pooling
(reduce_window; its gradient select_and_scatter), average pooling, a dynamic slice and a
stack of 3 dense layers scanned with lax.scan (a while loop, forward and backward).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

OUT = Path(__file__).resolve().parent / "data"
STEPS = 10
LR, B1, B2, EPS = 1e-2, 0.9, 0.999, 1e-8


def loss_fn(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((h @ w2 + b2 - y) ** 2)


def step(params, m, v, t, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    t = t + 1
    m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads, strict=True)]
    v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads, strict=True)]
    tf = t.astype(jnp.float32)
    params = [p - LR * (mi / (1 - B1 ** tf)) / (jnp.sqrt(vi / (1 - B2 ** tf)) + EPS)
              for p, mi, vi in zip(params, m, v, strict=True)]
    return params, m, v, t, loss


def cnn_loss(params, ids, y):
    table, kernel, stack, head = params
    x = table[ids]  # [B, 8, 8]: 8 embedding rows of 8 as an image
    x = x[:, None]  # NCHW, one channel
    x = jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME")  # [B, 4, 8, 8]
    x = jax.lax.reduce_window(jax.nn.relu(x), -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                              (1, 1, 2, 2), "VALID")  # [B, 4, 4, 4]
    x = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID") / 4
    x = jax.lax.dynamic_slice(x.reshape(x.shape[0], -1), (0, 2), (x.shape[0], 16))

    def layer(h, w):
        return jnp.tanh(h @ w), None

    x, _ = jax.lax.scan(layer, x, stack)
    return jnp.mean((x @ head - y) ** 2)


def adam_step(loss):
    def step(params, m, v, t, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        t = t + 1
        m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads, strict=True)]
        v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads, strict=True)]
        tf = t.astype(jnp.float32)
        params = [p - LR * (mi / (1 - B1 ** tf)) / (jnp.sqrt(vi / (1 - B2 ** tf)) + EPS)
                  for p, mi, vi in zip(params, m, v, strict=True)]
        return params, m, v, t, value
    return step


def write(name: str, step, params, x, y) -> None:
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = np.int32(0)
    jitted = jax.jit(step, donate_argnums=(0, 1, 2, 3))
    lowered = jitted.lower(params, m, v, t, x, y)
    (OUT / f"{name}_step.lowered.hlo").write_text(lowered.as_text(dialect="hlo"))
    (OUT / f"{name}_step.compiled.hlo").write_text(lowered.compile().as_text())
    args = [*params, *m, *v, t, x, y]
    np.savez(OUT / f"{name}_args.npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(args)})
    losses = []
    state = ([p.copy() for p in params], m, v, t)
    for _ in range(STEPS):
        *state, loss = jitted(*state, x, y)
        losses.append(float(loss))
    np.savez(OUT / f"{name}_reference.npz", losses=np.array(losses, np.float32),
             **{f"param{i}": np.asarray(p) for i, p in enumerate(state[0])})
    print(name, "losses", losses)


def make_cnn() -> None:
    rng = np.random.default_rng(1)
    params = [rng.normal(size=(10, 8)).astype(np.float32) * 0.5,
              rng.normal(size=(4, 1, 3, 3)).astype(np.float32) * 0.5,
              rng.normal(size=(3, 16, 16)).astype(np.float32) * 0.3,
              rng.normal(size=(16, 2)).astype(np.float32) * 0.5]
    ids = np.array([[1, 4, 4, 9, 0, 2, 7, 3], [5, 5, 1, 0, 8, 6, 2, 9]], np.int32)
    y = rng.normal(size=(2, 2)).astype(np.float32)
    write("jax_cnn", adam_step(cnn_loss), params, ids, y)


def main() -> None:
    rng = np.random.default_rng(0)
    params = [rng.normal(size=s).astype(np.float32) * 0.5
              for s in [(8, 16), (16,), (16, 4), (4,)]]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = np.int32(0)
    x = rng.normal(size=(5, 8)).astype(np.float32)
    y = rng.normal(size=(5, 4)).astype(np.float32)
    jitted = jax.jit(step, donate_argnums=(0, 1, 2, 3))
    lowered = jitted.lower(params, m, v, t, x, y)
    (OUT / "jax_adam_step.lowered.hlo").write_text(lowered.as_text(dialect="hlo"))
    (OUT / "jax_adam_step.compiled.hlo").write_text(lowered.compile().as_text())
    args = [*params, *m, *v, t, x, y]
    np.savez(OUT / "jax_adam_args.npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(args)})
    losses = []
    state = ([p.copy() for p in params], m, v, t)
    for _ in range(STEPS):
        *state, loss = jitted(*state, x, y)
        losses.append(float(loss))
    np.savez(OUT / "jax_adam_reference.npz", losses=np.array(losses, np.float32),
             **{f"param{i}": np.asarray(p) for i, p in enumerate(state[0])})
    print("losses", losses)


if __name__ == "__main__":
    main()
    make_cnn()
