"""Opening a file a user names: regular files only, never a device, FIFO or folder.

`open_regular(path)` opens without blocking (a FIFO with no writer would wait forever),
checks with `fstat` on the opened descriptor (so a file swapped after a check cannot slip
through) that it is a regular file, and returns it as a binary file in blocking mode.
`read_regular(path, limit)` reads the whole file when it holds at most `limit` bytes.
"""

from __future__ import annotations

import fcntl
import os
import stat
from typing import BinaryIO


class UserFileError(ValueError):
    """A file a user gave that nxcc refuses to read: `where` (the file, or file:member)
    and `what` is wrong; `str()` is the one line "where: what"."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def describe_mode(mode: int) -> str:
    """What kind of file `mode` (from stat) is, for a refusal."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str, what: str = "file") -> BinaryIO:
    """`path` opened for binary reading; UserFileError when it cannot be opened or is not
    a regular file (symbolic links are followed to what they name); `what` names the file
    in the refusal."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UserFileError(path, f"cannot read the {what} ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(path, f"is {describe_mode(mode)}, not a regular file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_size(f: BinaryIO) -> int:
    """The size in bytes of the open file `f`."""
    return os.fstat(f.fileno()).st_size


def read_regular(path: str, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file `path`; UserFileError when it is not one or holds
    more than `limit` bytes (`what` names it in the refusal)."""
    with open_regular(path, what) as f:
        size = file_size(f)
        if size > limit:
            raise UserFileError(path, f"{size} bytes, over the limit of {limit} for a "
                                f"{what}")
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise UserFileError(path, f"cannot read the {what} ({exc.strerror})") from None
    if len(data) > limit:  # grew while being read
        raise UserFileError(path, f"over the limit of {limit} bytes for a {what}")
    return data
