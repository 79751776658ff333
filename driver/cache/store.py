"""The compile cache on disk.

Layout (as the Neuron tools lay theirs out)::

    ROOT/                                 /var/tmp/neuron-compile-cache, NEURON_COMPILE_CACHE_URL
      neuronxcc-<compiler version>/         or --cache-dir
        MODULE_<module hash>+<flags hash>/  one published entry:
          model.neff                          the NEFF (a successful compile), or
          error.json                          the error of a failed one (code, message)
          compile_flags.json                  the normalised flags
          model.<ext>                         the module as given
          meta.json                           status, full hashes, NEFF size and SHA-256
        MODULE_<...>.lock                   the entry's lock file (flock)
        .tmp-MODULE_<...>-<pid>-<random>/   an entry being written

An entry is written in a `.tmp-` directory and published by one `rename`, so a process
killed while writing leaves only a `.tmp-` directory, which nothing reads (`clean` removes
it). An entry whose `meta.json` is not of the form `publish` writes, or whose NEFF or error
does not match it, is damaged: a lookup treats it as a miss and the compile replaces it.

Concurrent compiles of one key serialise on the entry's lock file: the first compiles and
publishes, the others wait for the lock, then find the entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from nxcc.backend.runtime.peer_liveness import process_alive
from nxcc.backend.userfiles import UserFileError, read_regular
from nxcc.backend.userfiles.structured import MAX_DOCUMENT_BYTES, load_json_text
from nxcc.driver.cache.key import CacheKey
from nxcc.driver.cache.layout import (
    ERROR,
    FLAGS,
    META,
    NEFF,
    STAGING_PREFIX,
    cache_root,
    read_meta,
    verified_neff,
    version_dir,
)
from nxcc.driver.errors import CompileError
from nxcc.version import COMPILER_VERSION

__all__ = ["FLAGS", "NEFF", "CacheEntry", "CompileCache", "cache_root", "read_entry",
           "remove_entry"]


@dataclass(frozen=True)
class CacheEntry:
    """A published entry: its directory and what `meta.json` says."""

    path: str
    meta: dict

    @property
    def failed(self) -> bool:
        return self.meta.get("status") == "failed"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def error(self) -> CompileError | None:
        """The remembered failure as the error it was, or None if `error.json` is missing,
        unreadable, not its recorded SHA-256 or not a compile error's code and message (a
        damaged entry)."""
        try:  # a regular file of bounded size and nesting (never a FIFO or a device)
            raw = read_regular(os.path.join(self.path, ERROR), MAX_DOCUMENT_BYTES, "error")
            if hashlib.sha256(raw).hexdigest() != self.meta.get("error_sha256"):
                return None
            err = load_json_text(raw, ERROR)
        except UserFileError:
            return None
        if not isinstance(err, dict) or not isinstance(err.get("message"), str) \
                or not err["message"].strip() or err.get("code") != self.meta["error_code"]:
            return None
        return CompileError(err["code"], err["message"])

    def neff_bytes(self) -> bytes | None:
        """The NEFF, or None if it is missing or does not match its recorded SHA-256 (a
        damaged entry)."""
        return verified_neff(self.path, self.meta)

    def size(self) -> int:
        return sum(e.stat().st_size for e in os.scandir(self.path) if e.is_file())


@dataclass(frozen=True)
class CompileCache:
    """One cache root; entries live under the directory of this compiler's version."""

    root: str

    @property
    def version_dir(self) -> str:
        return version_dir(self.root)

    def lookup(self, key: CacheKey) -> CacheEntry | None:
        """The published entry of `key`, or None."""
        return read_entry(os.path.join(self.version_dir, key.entry))

    @contextlib.contextmanager
    def locked(self, key: CacheKey, on_wait: object = None) -> Iterator[None]:
        """Hold the entry's lock; `on_wait()` is called first if another process holds it."""
        os.makedirs(self.version_dir, exist_ok=True)
        fd = os.open(os.path.join(self.version_dir, key.entry + ".lock"),
                     os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if callable(on_wait):
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @contextlib.contextmanager
    def staging(self, key: CacheKey) -> Iterator[str]:
        """A fresh directory to write `key`'s entry in; removed unless published."""
        os.makedirs(self.version_dir, exist_ok=True)
        path = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{key.entry}-{os.getpid()}-",
                                dir=self.version_dir)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def publish(self, key: CacheKey, staged: str, meta: dict) -> CacheEntry:
        """Write `meta.json` into `staged` and rename it to the entry (atomically)."""
        meta = {**meta, "module_sha256": key.module_sha256, "flags_sha256": key.flags_sha256,
                "compiler_version": COMPILER_VERSION, "created": time.time()}
        with open(os.path.join(staged, FLAGS), "w", encoding="utf-8") as f:
            json.dump(key.flags, f, indent=1, sort_keys=True)
        with open(os.path.join(staged, META), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        for name in os.listdir(staged):
            _fsync_file(os.path.join(staged, name))
        target = os.path.join(self.version_dir, key.entry)
        remove_entry(target)  # a damaged entry being replaced (under the lock)
        os.rename(staged, target)
        return CacheEntry(target, meta)

    def entries(self, all_versions: bool = False) -> list[CacheEntry]:
        """Every published entry (of this version, or of every version)."""
        found = []
        for directory in self._version_dirs(all_versions):
            for name in sorted(os.listdir(directory)):
                if name.startswith("MODULE_") and not name.endswith(".lock"):
                    entry = read_entry(os.path.join(directory, name))
                    if entry is not None:
                        found.append(entry)
        return found

    def clean(self, failed_only: bool = False, all_versions: bool = False) -> tuple[int, int]:
        """Remove entries (only failed ones with `failed_only`), leftovers of killed writers,
        damaged entries and free lock files; (entries removed, bytes freed)."""
        count = freed = 0
        for entry in self.entries(all_versions):
            if failed_only and not entry.failed:
                continue
            freed += entry.size()
            remove_entry(entry.path)
            count += 1
        if not failed_only:
            for version_dir in self._version_dirs(all_versions):
                _remove_leftovers(version_dir)
        return count, freed

    def _version_dirs(self, all_versions: bool) -> list[str]:
        if not all_versions:
            return [self.version_dir] if os.path.isdir(self.version_dir) else []
        if not os.path.isdir(self.root):
            return []
        return [os.path.join(self.root, d) for d in sorted(os.listdir(self.root))
                if d.startswith("neuronxcc-") and os.path.isdir(os.path.join(self.root, d))]


def read_entry(path: str) -> CacheEntry | None:
    """The entry at `path`, or None if there is none (or it is not a complete entry)."""
    meta = read_meta(path)
    return None if meta is None else CacheEntry(path, meta)


def remove_entry(path: str) -> None:
    """Remove an entry so that it disappears at once (renamed aside, then deleted)."""
    if not os.path.exists(path):
        return
    aside = f"{os.path.dirname(path)}/{STAGING_PREFIX}removed-{os.path.basename(path)}-" \
            f"{os.getpid()}-{time.monotonic_ns()}"
    os.rename(path, aside)
    if os.path.isdir(aside) and not os.path.islink(aside):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.unlink(aside)


def _remove_leftovers(version_dir: str) -> None:
    """Staging directories of writers that are gone, lock files nobody holds, and damaged
    entries (a `MODULE_` name that does not read as an entry)."""
    for name in os.listdir(version_dir):
        path = os.path.join(version_dir, name)
        if name.startswith("MODULE_") and not name.endswith(".lock"):
            if read_entry(path) is None:
                remove_entry(path)
        elif name.startswith(STAGING_PREFIX):
            pid = name.removeprefix(STAGING_PREFIX).split("-")[-2:-1]
            if not pid or not pid[0].isdigit() or not process_alive(int(pid[0])):
                shutil.rmtree(path, ignore_errors=True)
        elif name.endswith(".lock"):
            _remove_free_lock(path)


def _remove_free_lock(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
