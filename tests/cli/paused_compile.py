"""`python -m tests.cli.paused_compile POINT MARKER ARGS...`: `neuronx-cc ARGS...` that, on
reaching POINT of writing its compile cache entry, creates the file MARKER and sleeps, so a
test can kill it exactly there.

The points, in the order a compile reaches them (`driver/cache/store.py`,
`driver/cached_compile.py`):

- staging: the staging directory made, nothing in it;
- model: the model copied into it, the compile not started;
- neff: the NEFF compiled into it;
- flags: `compile_flags.json` written, `meta.json` not opened;
- meta: `meta.json` written, nothing synced;
- synced: every file synced, an entry it replaces still there;
- removed: the entry it replaces removed, the staging directory not renamed;
- published: renamed into place;
- hit: the NEFF about to be copied from the entry to the output;
- error: a failed compile's `error.json` written, not yet published.

Each is a call the cache code makes, wrapped here in this process before the command line
starts; the compiler has no hook for them.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from nxcc.driver import cached_compile
from nxcc.driver.cache import store
from nxcc.driver.cache.key import CacheKey
from nxcc.driver.cache.layout import META
from nxcc.driver.cache.store import CacheEntry, CompileCache


def install(point: str, marker: str) -> None:
    """Wrap the calls at which the points lie, so that `point` pauses."""

    def at(name: str) -> None:
        if name == point:
            with open(marker, "w", encoding="utf-8"):
                pass
            time.sleep(3600)

    staging = CompileCache.staging
    publish = CompileCache.publish
    compile_ = cached_compile._compile
    write_output = cached_compile.write_bytes_atomically
    fsync, remove = store._fsync_file, store.remove_entry

    @contextlib.contextmanager
    def paused_staging(cache: CompileCache, key: CacheKey) -> Iterator[str]:
        with staging(cache, key) as path:
            at("staging")
            yield path

    def paused_compile(*args: Any) -> None:
        at("model")
        compile_(*args)
        at("neff")

    def paused_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode and os.path.basename(str(file)) == META:
            at("flags")
        return builtins.open(file, mode, *args, **kwargs)

    def paused_fsync(path: str) -> None:
        at("meta")
        fsync(path)

    def paused_remove(path: str) -> None:
        at("synced")
        remove(path)
        at("removed")

    def paused_publish(cache: CompileCache, key: CacheKey, staged: str,
                       meta: dict) -> CacheEntry:
        if meta.get("status") == "failed":
            at("error")
        entry = publish(cache, key, staged, meta)
        at("published")
        return entry

    def paused_write(path: str, data: bytes) -> None:
        at("hit")
        write_output(path, data)

    patches: list[tuple[object, str, Callable[..., Any]]] = [
        (CompileCache, "staging", paused_staging), (CompileCache, "publish", paused_publish),
        (cached_compile, "_compile", paused_compile),
        (cached_compile, "write_bytes_atomically", paused_write),
        (store, "open", paused_open), (store, "_fsync_file", paused_fsync),
        (store, "remove_entry", paused_remove)]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)


if __name__ == "__main__":
    install(sys.argv[1], sys.argv[2])
    from nxcc.cli.entry import main

    main(sys.argv[3:])
