"""Replacing a file atomically, leaving nothing behind however the writer dies.

`atomic_file(target)` yields a binary file; when the block ends normally its contents are
flushed, fsynced and put in place as `target` (the directory fsynced after). Where Linux's
O_TMPFILE is available the data goes to an unnamed file in the target's directory. A new
`target` is then linked straight to it, so the file has no other name at any moment. One
that exists is replaced by a rename from a temporary name linked just before, the two
system calls back to back: only a SIGKILL between them can leave that name
(`.TARGET.XXXXXXXX.tmp`) behind. A SIGKILL anywhere else leaves neither a partial `target`
nor a temporary file. Elsewhere a named temporary file is used and removed on any exception
(SIGINT, and SIGTERM once the CLI turns it into one).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from typing import BinaryIO

_PROC_FD = "/proc/self/fd"


@contextlib.contextmanager
def atomic_file(target: str) -> Iterator[BinaryIO]:
    """A file whose contents replace `target` when the block ends without an exception
    (the previous `target` untouched otherwise)."""
    directory = os.path.dirname(os.path.abspath(target))
    base = os.path.basename(target)
    fd, named = _open_unnamed(directory)
    if fd < 0:
        fd, named = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fchmod(out.fileno(), 0o644)
            os.fsync(out.fileno())
            if named is None:
                _publish_unnamed(out.fileno(), directory, base, target)
        if named is not None:
            os.replace(named, target)
    except BaseException:
        if named is not None:
            with contextlib.suppress(OSError):
                os.unlink(named)
        raise
    _fsync_directory(directory)


def write_chunks(target: str, chunks: Iterable[bytes | memoryview]) -> None:
    """`chunks` written, in order, as the new contents of `target` (atomically)."""
    with atomic_file(target) as out:
        for chunk in chunks:
            out.write(chunk)


def _open_unnamed(directory: str) -> tuple[int, str | None]:
    """An O_TMPFILE descriptor in `directory` (-1 where the OS or file system has none)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir(_PROC_FD):
        return -1, None
    try:
        return os.open(directory, flag | os.O_WRONLY, 0o644), None
    except OSError:
        return -1, None


def _publish_unnamed(fd: int, directory: str, base: str, target: str) -> None:
    """Give the unnamed file `fd` the name `target`: linked straight to it when `target`
    does not exist, else linked under a fresh temporary name in `directory` and renamed
    over `target` at once (the temporary name removed if the rename fails)."""
    proc = os.open(_PROC_FD, os.O_RDONLY)
    try:
        # linkat(AT_SYMLINK_FOLLOW) through /proc: os.link uses plain link(), which does
        # not follow the magic link, unless a directory fd is given
        with contextlib.suppress(FileExistsError):
            os.link(str(fd), target, src_dir_fd=proc, follow_symlinks=True)
            return
        while True:
            name = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
            try:
                os.link(str(fd), name, src_dir_fd=proc, follow_symlinks=True)
                break
            except FileExistsError:
                continue
        try:
            os.replace(name, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise
    finally:
        os.close(proc)


def _fsync_directory(directory: str) -> None:
    """Best-effort fsync of `directory` so the rename itself is durable."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
