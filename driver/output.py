"""Writing a result file atomically: a temp file beside it, fsynced, renamed over it."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_bytes_atomically(path: str, data: bytes) -> None:
    """`path` holds `data`, or (on any failure) is as it was; no temp file is left."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
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
