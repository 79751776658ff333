"""Regenerate the JAX training-step fixture in tests/training/data/ (needs JAX; the tests
do not).

    /work/jaxvenv/bin/python tests/training/make_jax_reference.py

A 2-layer MLP (8 -> 16 tanh -> 4) with a mean-squared-error loss and Adam written in JAX
(lr 1e-2, betas 0.9/0.999, eps 1e-8, bias-corrected), one step jitted with its parameters,
moments and step counter donated (so the HLO header carries input_output_alias). Stored:
the lowered and compiled HLO text, ``jax_adam_args.npz`` (the step's arguments in
parameter order, ``arg0`` ...), and ``jax_adam_reference.npz`` (``losses`` of 10 steps and
the parameters after them, ``param0`` ...).
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
