"""JAX on nxcc (`pip install 'nxcc[jax]'`): `jit` as `jax.jit`, compiled to a NEFF and run on a
(simulated) NeuronCore.

    import jax.numpy as jnp
    import nxcc.jax

    f = nxcc.jax.jit(lambda x, w: jnp.tanh(x @ w), target="trn1")
    f(x, w)                                   # lowered by JAX, compiled by nxcc, run; cached

Importing `nxcc` never imports JAX; importing `nxcc.jax` does, and says how to install it
when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

try:
    import jax as _jax  # noqa: F401 - fail here, with the install line, when absent
except ImportError as _exc:
    raise ImportError("nxcc.jax needs JAX: pip install 'nxcc[jax]'") from _exc

from nxcc.jax.jit import Jitted, argnames, argnums


def jit(fn: Callable[..., Any] | None = None, *, target: str, lnc: int | None = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None,
        **flags: object) -> Any:
    """`fn` compiled by nxcc for `target` (trn1, trn1n, trn2, inf2) at logical core size
    `lnc`, specialized and cached as `jax.jit` does: per static argument values and per
    pytree structure, shapes and dtypes of the others. `flags` are further `nxcc.compile`
    flags (`auto_cast="matmult"`). Without `fn`, returns a decorator."""
    def wrap(f: Callable[..., Any]) -> Jitted:
        return Jitted(f, target, lnc, argnums(static_argnums), argnames(static_argnames),
                      argnums(donate_argnums), argnames(donate_argnames), dict(flags))

    return wrap if fn is None else wrap(fn)


__all__ = ["Jitted", "jit"]
