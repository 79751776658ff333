"""`jit`: a JAX function compiled by nxcc, called like `jax.jit`'s result.

A call is keyed by what `jax.jit` specializes on: the values of the static arguments and,
for the others, the pytree structure and each leaf's shape, dtype and weak type. On a new
key the function is lowered by JAX (`jax.jit(...).lower(...)`, with every argument kept),
its StableHLO text compiled by `nxcc.compile` and the NEFF loaded by `nxcc.load`; later calls
with the same key run that model. The NEFF takes the dynamic leaves in pytree order and gives
the outputs' leaves in order, which are rebuilt into the function's result as jax arrays.

Donated arguments (`donate_argnums`, `donate_argnames`) are deleted after the call, as
`jax.jit` deletes the buffers it reuses, so code that reads them afterwards fails here too.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import nxcc

try:  # a weakly typed result, as jax.jit returns one (JAX has no public way to make one)
    from jax._src.lax.lax import _convert_element_type as _convert
except ImportError:  # pragma: no cover - another JAX: results are strongly typed
    _convert = None


@dataclass(frozen=True)
class Compiled:
    """One specialization: the loaded model, each input leaf's numpy dtype, which leaves
    are donated, the structure of the result and which of its leaves are weakly typed."""

    model: Any
    dtypes: tuple[np.dtype, ...]
    donated: tuple[bool, ...]
    out_tree: Any
    out_weak: tuple[bool, ...]


class Jitted:
    """What `jit` returns: call it like the function; `cache_size()` counts compilations."""

    def __init__(self, fn: Callable[..., Any], target: str, lnc: int | None,
                 static_argnums: tuple[int, ...], static_argnames: tuple[str, ...],
                 donate_argnums: tuple[int, ...], donate_argnames: tuple[str, ...],
                 flags: dict[str, Any]) -> None:
        self.fn = fn
        self.target = target
        self.lnc = lnc
        self.flags = flags
        self._static = _both_ways(fn, static_argnums, static_argnames)
        self._donate = _both_ways(fn, donate_argnums, donate_argnames)
        self._cache: dict[Hashable, Compiled] = {}
        self._lock = threading.Lock()
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "jitted")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dynamic, key = self._split(args, kwargs)
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is None:
                compiled = self._cache[key] = self._compile(args, kwargs)
        leaves = jax.tree_util.tree_leaves(dynamic)
        arrays = [np.asarray(leaf, dtype=dtype) for leaf, dtype in
                  zip(leaves, compiled.dtypes, strict=True)]
        outputs = compiled.model(*arrays)
        if isinstance(outputs, dict):
            outputs = list(outputs.values())
        result = jax.tree_util.tree_unflatten(compiled.out_tree, [
            _as_jax(o, weak) for o, weak in zip(outputs, compiled.out_weak, strict=True)])
        for leaf, donated in zip(leaves, compiled.donated, strict=True):
            if donated and isinstance(leaf, jax.Array) and not leaf.is_deleted():
                leaf.delete()
        return result

    def cache_size(self) -> int:
        """How many specializations have been compiled (and are loaded)."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Unload every compiled specialization; the next call compiles again."""
        with self._lock:
            cache, self._cache = self._cache, {}
        for compiled in cache.values():
            compiled.model.close()

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> tuple[tuple[Any, ...], Hashable]:
        """((dynamic positional args, dynamic keyword args), the cache key)."""
        static_nums, static_names = self._static
        nums = {i if i >= 0 else i + len(args) for i in static_nums}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        statics = tuple((i, args[i]) for i in sorted(nums) if 0 <= i < len(args)) + tuple(
            (k, kwargs[k]) for k in sorted(kwargs) if k in static_names)
        try:
            hash(statics)
        except TypeError as exc:
            raise ValueError(f"a static argument must be hashable, as jax.jit requires: "
                             f"{exc}") from None
        dynamic = (dyn_args, dyn_kwargs)
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        return dynamic, (statics, tree, tuple(_abstract(leaf) for leaf in leaves))

    def _compile(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Compiled:
        static_nums, static_names = self._static
        donate_nums, donate_names = self._donate
        traced = jax.jit(self.fn, static_argnums=static_nums, static_argnames=static_names,
                         donate_argnums=donate_nums, donate_argnames=donate_names,
                         keep_unused=True).trace(*args, **kwargs)
        lowered = traced.lower()
        infos = jax.tree_util.tree_leaves(lowered.args_info)
        neff = nxcc.compile(lowered.as_text(), target=self.target, lnc=self.lnc, **self.flags)
        model = nxcc.load(neff)
        out_weak = tuple(bool(getattr(aval, "weak_type", False))
                         for aval in traced.jaxpr.out_avals)
        return Compiled(model, tuple(np.dtype(i.dtype) for i in infos),
                        tuple(bool(i.donated) for i in infos), lowered.out_tree, out_weak)


def _as_jax(array: np.ndarray, weak: bool) -> jax.Array:
    """`array` as a jax array, weakly typed when the result JAX describes is."""
    if weak and _convert is not None:
        return _convert(array, weak_type=True)
    return jnp.asarray(array)


def _abstract(leaf: Any) -> Hashable:
    """What jax.jit specializes a dynamic leaf on: shape, dtype, weak type (a Python scalar
    by its type)."""
    if isinstance(leaf, bool | int | float | complex):
        return type(leaf).__name__
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        array = np.asarray(leaf)
        shape, dtype = array.shape, array.dtype
    return tuple(shape), str(dtype), bool(getattr(leaf, "weak_type", False))


def _both_ways(fn: Callable[..., Any], nums: Iterable[int], names: Iterable[str]
               ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(argnums, argnames) each completed from the other through `fn`'s signature, as
    jax.jit completes them (a parameter named by either is static/donated by both)."""
    nums, names = tuple(nums), tuple(names)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_index = {i: p.name for i, p in enumerate(positional) if p.kind != p.POSITIONAL_ONLY}
    by_name = {name: i for i, name in by_index.items()}
    names += tuple(by_index[i] for i in nums if i in by_index and by_index[i] not in names)
    nums += tuple(by_name[n] for n in names if n in by_name and by_name[n] not in nums)
    return nums, names


def argnums(value: int | Sequence[int] | None) -> tuple[int, ...]:
    """jax.jit's int-or-sequence argument as a tuple."""
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


def argnames(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """jax.jit's str-or-iterable argument as a tuple."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)
