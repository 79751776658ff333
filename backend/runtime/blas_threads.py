"""Limiting OpenBLAS threads while cores run concurrently, and restoring them exactly.

numpy links OpenBLAS (as `libscipy_openblas*` in numpy's wheels). OpenBLAS 0.3.27+ exports
`openblas_set_num_threads_local(n)`, which returns the previous count. Despite its name, in
the builds numpy ships (0.3.31 here) the count it sets is seen by every thread of the
process, so two threads that each limit and then restore in the other's order leave the
process limited for good. Two helpers, built so that either behaviour ends exactly where it
started:

- `limit_process(n)`: a region any thread may open; while at least one is open the count is
  the smallest open limit, and when the last one closes it is set back to the count read
  before the first one opened (one lock, a list of open limits);
- `limit_this_thread(n)`: for a worker thread inside such a region (the count an OpenBLAS
  that really is per thread needs), restoring what the setter returned.

`blas_threads()` reads the count the calling thread's BLAS calls use (None when unknown, or
when OPENBLAS_NUM_THREADS sets it); `blas_thread_count()` reads it in every case (how many
threads a core's other work may use, `parallel_steps`).
The functions are found in the libraries already loaded (read from /proc/self/maps, opened
with ctypes). Where they cannot be found (another BLAS, no /proc), or where
OPENBLAS_NUM_THREADS is set in the environment, nothing is changed; except by
`limit_process(n, even_when_set=True)`, for an execution that runs several threads itself
that make BLAS calls side by side (`parallel_steps`: one BLAS thread each; a training job's
ranks, threads of one process: the count shared among them): the user's count of threads
is kept, only who runs them changes.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SETTERS = ("openblas_set_num_threads_local",)
GETTERS = ("openblas_get_num_threads", "openblas_get_num_threads64_",
           "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads")


def _functions() -> tuple[Callable[[int], int], Callable[[], int]] | None:
    """(setter, getter) of the loaded OpenBLAS, or None (also where OPENBLAS_NUM_THREADS
    is set: the count is the user's, never changed)."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return None
    return _library()


@functools.cache
def _library() -> tuple[Callable[[int], int], Callable[[], int]] | None:
    """(setter, getter) of the loaded OpenBLAS, or None."""
    import numpy  # noqa: F401  (its BLAS must be loaded before we look for it)

    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return None
    for path in sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


def blas_threads() -> int | None:
    """The number of threads the calling thread's BLAS calls use, where nxcc may change it
    (`limit_process`); None if unknown or set by OPENBLAS_NUM_THREADS."""
    found = _functions()
    return None if found is None else int(found[1]())


def blas_thread_count() -> int | None:
    """The number of threads the calling thread's BLAS calls use, however it was set (the
    OpenBLAS getter; else OPENBLAS_NUM_THREADS when it is a positive integer); None if
    unknown."""
    found = _library()
    if found is not None:
        return int(found[1]())
    try:
        told = int(os.environ.get("OPENBLAS_NUM_THREADS", ""))
    except ValueError:
        return None
    return told if told > 0 else None


_lock = threading.Lock()
_open: list[int] = []  # the limits of the limit_process regions open now
_before: list[int] = []  # the count read when the first of them opened


@contextmanager
def limit_process(threads: int, *, even_when_set: bool = False) -> Iterator[None]:
    """BLAS uses at most `threads` threads inside the block; set back exactly when the last
    open region (of any thread) closes. Nothing where OPENBLAS_NUM_THREADS is set, unless
    `even_when_set` (an execution that runs the user's threads itself, one BLAS call per
    thread: `parallel_steps`)."""
    found = _library() if even_when_set else _functions()
    if found is None:
        yield
        return
    setter, getter = found
    threads = max(1, threads)
    with _lock:
        if not _open:
            _before[:] = [int(getter())]
        _open.append(threads)
        setter(min(_open))
    try:
        yield
    finally:
        with _lock:
            _open.remove(threads)
            setter(min(_open) if _open else _before[0])


@contextmanager
def limit_this_thread(threads: int) -> Iterator[None]:
    """BLAS calls from this thread use at most `threads` threads inside the block; the
    previous count is set back at its end. Concurrent threads should all be inside one
    `limit_process` region (see the module doc)."""
    found = _functions()
    if found is None:
        yield
        return
    setter, getter = found
    before = int(getter())
    previous = setter(max(1, threads))
    try:
        yield
    finally:
        setter(previous if previous > 0 else before)
