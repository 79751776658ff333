"""nxcc.jax.jit as jax.jit: an MLP, a lax.scan and a training step with donated parameters
match jax.jit; static arguments and pytrees are taken as jax.jit takes them, and a function is
compiled once per static values and input shapes."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="the jax extra is not installed (pip install '.[jax]')")

import jax.numpy as jnp  # noqa: E402

import nxcc.jax  # noqa: E402

TARGET = "trn1"


def close(got: object, want: object) -> None:
    """Same pytree structure, each leaf's dtype, weak type and shape, values within rtol
    1e-5."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert isinstance(g, jax.Array)
        assert (g.dtype, g.weak_type, g.shape) == (w.dtype, w.weak_type, w.shape)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def init_mlp(key: jax.Array, sizes: list[int]) -> list[dict[str, jax.Array]]:
    keys = jax.random.split(key, len(sizes) - 1)
    return [{"w": jax.random.normal(k, (m, n)) / np.sqrt(m), "b": jnp.full((n,), 0.1)}
            for k, m, n in zip(keys, sizes[:-1], sizes[1:], strict=True)]


def mlp(params: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
    for layer in params[:-1]:
        x = jax.nn.gelu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def test_an_mlp_matches_jax_jit() -> None:
    params = init_mlp(jax.random.PRNGKey(0), [8, 32, 32, 4])
    x = jax.random.normal(jax.random.PRNGKey(1), (16, 8))
    close(nxcc.jax.jit(mlp, target=TARGET)(params, x), jax.jit(mlp)(params, x))


def cumulative(xs: jax.Array, decay: float) -> tuple[jax.Array, jax.Array]:
    def body(carry: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        carry = carry * decay + jnp.sin(x)
        return carry, carry.sum()

    return jax.lax.scan(body, jnp.zeros(xs.shape[1:]), xs)


def test_a_scan_matches_jax_jit() -> None:
    xs = jax.random.normal(jax.random.PRNGKey(2), (12, 3, 5))
    got = nxcc.jax.jit(cumulative, target=TARGET, static_argnums=1)(xs, 0.9)
    close(got, jax.jit(cumulative, static_argnums=1)(xs, 0.9))


def train_step(params: list[dict[str, jax.Array]], batch: dict[str, jax.Array], lr: float
               ) -> tuple[list[dict[str, jax.Array]], jax.Array]:
    def loss(p: list[dict[str, jax.Array]]) -> jax.Array:
        logits = mlp(p, batch["x"])
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * batch["y"], axis=-1))

    value, grads = jax.value_and_grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), value


def test_a_training_step_with_donated_parameters_matches_jax_jit() -> None:
    key = jax.random.PRNGKey(3)
    params = init_mlp(key, [6, 16, 3])
    batch = {"x": jax.random.normal(key, (10, 6)),
             "y": jax.nn.one_hot(jax.random.randint(key, (10,), 0, 3), 3)}
    step = nxcc.jax.jit(train_step, target=TARGET, donate_argnums=0, static_argnames="lr")
    reference = jax.jit(train_step, donate_argnums=0, static_argnames="lr")
    ours, theirs = params, jax.tree_util.tree_map(jnp.copy, params)
    losses = []
    for _ in range(4):
        donated = ours
        ours, loss = step(ours, batch, lr=0.5)
        theirs, reference_loss = reference(theirs, batch, lr=0.5)
        close((ours, loss), (theirs, reference_loss))
        losses.append(float(loss))
        assert all(leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(donated))
    assert losses == sorted(losses, reverse=True)  # it learns
    assert step.cache_size() == 1


def test_static_arguments_pytrees_and_the_cache() -> None:
    def f(tree: dict, n: int, *, mode: str = "scale") -> tuple[jax.Array, dict]:
        x, (y, z) = tree["x"], tree["yz"]
        out = x * n if mode == "scale" else x + n
        return out, {"sum": y + z, "none": None}

    g = nxcc.jax.jit(f, target=TARGET, static_argnums=1, static_argnames="mode")
    tree = {"x": jnp.arange(3.0), "yz": (jnp.ones((2, 2)), jnp.full((2, 2), 2.0))}
    close(g(tree, 3), jax.jit(f, static_argnums=1, static_argnames="mode")(tree, 3))
    assert g.cache_size() == 1
    close(g(tree, 3), f(tree, 3))                     # same key: no compilation
    assert g.cache_size() == 1
    close(g(tree, 4), f(tree, 4))                     # a new static value
    close(g(tree, n=4, mode="add"), f(tree, 4, mode="add"))   # static by name, new value
    bigger = {**tree, "x": jnp.arange(5.0)}
    close(g(bigger, 3), f(bigger, 3))                 # a new shape
    assert g.cache_size() == 4
    close(g(tree, 3), f(tree, 3))                     # an old key again
    assert g.cache_size() == 4
    with pytest.raises(ValueError, match="hashable"):
        g(tree, [3])
    g.clear_cache()
    assert g.cache_size() == 0
