"""One registry type for every per-op table: kernels, step plans, sharding and mesh partition
rules, FLOP counts, gradient rules, the runtime's collective algorithms, and the frontends'
converter tables.

A `Registry` holds one entry per key and refuses a second registration of the same key.
An `OpTable` is a registry keyed by op definitions (`OpDef` objects, compared by identity):
entries are registered against the definition itself (``@KERNELS.register(ops.erf)``), so a
misspelt op fails at import with AttributeError; lookups also accept the op's text name (the
name the IR text and the NEFF program use).

A registry may be given a `load` function, run once before the first lookup or iteration,
that imports the modules whose import registers the entries. Threads that look up while
another thread loads wait for the load to finish (ranks compiling in parallel threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

from nxcc.ir.opdef import OpDef, get_opdef

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Held while a registry loads (re-entrant: the loading thread may look up meanwhile).
_LOADING = threading.RLock()


class Registry(Generic[K, V]):
    """`what` names an entry in errors ("kernel", "sharding rule"...)."""

    def __init__(self, what: str, load: Callable[[], object] | None = None) -> None:
        self.what = what
        self._entries: dict[K, V] = {}
        self._load = load
        self._pending = load is not None

    def _loaded(self) -> dict[K, V]:
        if self._pending:
            with _LOADING:
                if self._load is not None:
                    load, self._load = self._load, None
                    try:
                        load()
                    finally:
                        self._pending = False
        return self._entries

    def _key(self, key: object) -> K:
        return key  # type: ignore[return-value]

    def add(self, key: K, value: V) -> None:
        """Register `value` for `key`; ValueError if `key` already has an entry."""
        if key in self._entries:
            raise ValueError(f"{self.what} for {key} registered twice")
        self._entries[key] = value

    def register(self, *keys: K) -> Callable[[V], V]:
        """Decorator: register the decorated object for each of `keys`."""

        def decorate(value: V) -> V:
            for key in keys:
                self.add(key, value)
            return value

        return decorate

    def __getitem__(self, key: K | str) -> V:
        try:
            return self._loaded()[self._key(key)]
        except KeyError:
            raise KeyError(f"no {self.what} for '{key}'") from None

    def get(self, key: K | str, default: V | None = None) -> V | None:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        try:
            return self._key(key) in self._loaded()
        except KeyError:
            return False

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._loaded()))

    def __len__(self) -> int:
        return len(self._loaded())

    def items(self) -> list[tuple[K, V]]:
        return list(self._loaded().items())


class OpTable(Registry[OpDef, V]):
    """A registry keyed by op definitions; lookups take the definition or its text name."""

    def _key(self, key: object) -> OpDef:
        if isinstance(key, OpDef):
            return key
        if isinstance(key, str):
            return get_opdef(key)
        raise TypeError(f"{self.what}s are keyed by op definitions, got {key!r}")

    def add(self, key: OpDef, value: V) -> None:
        if not isinstance(key, OpDef):
            raise TypeError(f"register a {self.what} against an op definition "
                            f"(nxcc.ir.ops.<name>), not {key!r}")
        super().add(key, value)
