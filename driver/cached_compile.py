"""Compiling through the compile cache.

`compile_cached(path, options, cache)`: look the compile up; on a hit copy the NEFF out (or
raise the remembered error); on a miss take the entry's lock (waiting while another process
compiles the same key, then reusing its entry), compile into a staging directory, publish
it and copy the NEFF out. The hit path reads the file's bytes and two small JSON files: it
imports no frontend, pass or numpy (`driver.compile` is imported on a miss only).

Compiles that print IR (`--print-ir-after`) or keep their steps (`SaveTemps`) bypass the
cache: they are asked for their side effects.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from nxcc.driver.cache.key import CacheKey, make_key
from nxcc.driver.cache.store import NEFF, CompileCache
from nxcc.driver.errors import WRITE_FAILED, CompileError, write_error
from nxcc.driver.frontends import choose_framework
from nxcc.driver.hbm_check import LIMIT_VARIABLE, hbm_limit
from nxcc.driver.options import CompileOptions
from nxcc.driver.output import write_bytes_atomically
from nxcc.errors import BAD_ARGUMENT

log = logging.getLogger("nxcc.compiler")

HIT, MISS, WAITED, BYPASS = "hit", "miss", "waited", "bypass"


@dataclass(frozen=True)
class CachedCompile:
    """What happened: `status` (hit, miss, waited: another process compiled it, bypass:
    the cache was off or not applicable), the entry's name, the seconds spent and the key
    (None on a bypass)."""

    status: str
    entry: str | None
    seconds: float
    key: CacheKey | None = None


def compile_key(path: str, options: CompileOptions) -> CacheKey:
    """The cache key of compiling `path` with `options` (NCC_EARG001 if unreadable)."""
    if not os.path.isfile(path):
        raise CompileError(BAD_ARGUMENT, f"model file {path!r} does not exist")
    framework, _ = choose_framework(path, options.framework)
    name = os.path.splitext(os.path.basename(path))[0]
    flags = {**options.output_flags(), "framework": framework, "name": name}
    if os.environ.get(LIMIT_VARIABLE):  # a changed HBM limit may refuse what passed
        flags["hbm_limit"] = hbm_limit(options.target, options.logical_nc_config)
    try:
        return make_key(path, flags)
    except OSError as exc:
        raise CompileError(BAD_ARGUMENT, f"cannot read model file {path!r}: "
                           f"{exc.strerror or exc}") from None


def compile_cached(path: str, options: CompileOptions, cache: CompileCache | None,
                   emit: Callable[[str], None] = print,
                   progress: Callable[[str], None] | None = None) -> CachedCompile:
    """Compile `path` to `options.output` through `cache` (None: no cache)."""
    start = time.perf_counter()
    if cache is None or options.print_ir_after or options.save_temps:
        _compile(path, options, emit, progress)
        return CachedCompile(BYPASS, None, time.perf_counter() - start)
    key = compile_key(path, options)
    if _use_entry(cache, key, options.output, options.retry_failed):
        log.info("compile cache hit: %s", key.entry)
        return CachedCompile(HIT, key.entry, time.perf_counter() - start, key)

    def waiting() -> None:
        log.info("waiting for another process compiling %s", key.entry)
        if progress is not None:
            progress("waiting for the compile cache")

    with cache.locked(key, on_wait=waiting):
        if _use_entry(cache, key, options.output, options.retry_failed):
            log.info("compile cache hit after waiting: %s", key.entry)
            return CachedCompile(WAITED, key.entry, time.perf_counter() - start, key)
        log.info("compile cache miss: compiling %s", key.entry)
        _compile_into_cache(path, options, cache, key, emit, progress)
    if not _use_entry(cache, key, options.output):
        raise CompileError(BAD_ARGUMENT, f"compile cache entry {key.entry} vanished after "
                           "being written (is another process cleaning the cache?)")
    return CachedCompile(MISS, key.entry, time.perf_counter() - start, key)


def _compile(path: str, options: CompileOptions, emit: Callable[[str], None],
             progress: Callable[[str], None] | None) -> None:
    # on a miss only: a cache hit loads no frontend, pass or numpy (see the docstring)
    from nxcc.driver.compile import compile_model

    compile_model(path, options, emit, progress)


def _use_entry(cache: CompileCache, key: CacheKey, output: str,
               retry_failed: bool = False) -> bool:
    """Copy the entry's NEFF to `output` (True), raise its remembered error, or False when
    there is no usable entry (a damaged one is ignored: the compile replaces it; a
    remembered failure too when `retry_failed`)."""
    entry = cache.lookup(key)
    if entry is None:
        return False
    if entry.failed and retry_failed:
        log.info("compile cache: %s failed before; compiling again "
                 "(--retry_failed_compilation)", key.entry)
        return False
    if entry.failed:
        error = entry.error()
        if error is not None:
            log.info("compile cache: %s failed before; not compiling again", key.entry)
            raise error
    data = None if entry.failed else entry.neff_bytes()
    if data is None:
        log.warning("compile cache entry %s is damaged; compiling again", key.entry)
        return False
    try:
        write_bytes_atomically(output, data)
    except OSError as exc:
        raise write_error(output, exc) from None
    return True


def _compile_into_cache(path: str, options: CompileOptions, cache: CompileCache,
                        key: CacheKey, emit: Callable[[str], None],
                        progress: Callable[[str], None] | None) -> None:
    """Compile into a staging directory and publish it, a failure included (but not an
    argument error or a failed write: those are not the module's). A write into the cache
    that fails (a full disk) is NCC_EIO001 naming the entry; the staging directory goes."""
    try:
        with cache.staging(key) as staged:
            neff = os.path.join(staged, NEFF)
            shutil.copyfile(path, os.path.join(staged, "model" + os.path.splitext(path)[1]))
            try:
                _compile(path, replace(options, output=neff), emit, progress)
            except CompileError as exc:
                if exc.code in NOT_REMEMBERED:
                    raise
                _publish_failure(cache, key, staged, exc)
                raise
            with open(neff, "rb") as f:
                data = f.read()
            cache.publish(key, staged, {"status": "ok", "neff_bytes": len(data),
                                        "neff_sha256": hashlib.sha256(data).hexdigest()})
    except OSError as exc:
        raise _cache_write_error(cache, key, exc.strerror or str(exc)) from None
    except CompileError as exc:
        if exc.code == WRITE_FAILED:
            reason = exc.args[0].rsplit(": ", 1)[-1]  # "cannot write 'staged': REASON"
            raise _cache_write_error(cache, key, reason) from None
        raise


def _cache_write_error(cache: CompileCache, key: CacheKey, reason: str) -> CompileError:
    what = f"compile cache entry {key.entry} in {cache.version_dir!r}"
    return CompileError(WRITE_FAILED, f"{write_error(what, reason, what).args[0]} "
                        "(--no-cache compiles without the cache)")


NOT_REMEMBERED = (BAD_ARGUMENT, WRITE_FAILED)
"""Failures that are the command line's or the disk's, not the module's."""


def _publish_failure(cache: CompileCache, key: CacheKey, staged: str,
                     exc: CompileError) -> None:
    raw = json.dumps({"code": exc.code, "message": exc.args[0]}).encode("utf-8")
    with open(os.path.join(staged, "error.json"), "wb") as f:
        f.write(raw)
    cache.publish(key, staged, {"status": "failed", "error_code": exc.code,
                                "error_sha256": hashlib.sha256(raw).hexdigest()})
