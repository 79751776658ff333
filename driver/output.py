"""Writing a result file atomically: a temp file beside it, fsynced, renamed over it."""

from __future__ import annotations

import contextlib
import os


def write_bytes_atomically(path: str, data: bytes) -> None:
    """`path` holds `data`, or (on any failure) is as it was; no temp file is left."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = _exclusive_temp(directory, f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), 0o644)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _exclusive_temp(directory: str, prefix: str) -> tuple[int, str]:
    """A new file `directory/prefix<random>.tmp` created exclusively (mode 0600), as
    `tempfile.mkstemp` makes one; written here so that a replayed cache hit does not import
    `tempfile` and what it pulls in."""
    for _ in range(100):
        tmp = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {directory}")
