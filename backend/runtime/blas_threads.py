"""Limiting OpenBLAS threads per calling thread, so concurrent cores do not oversubscribe.

numpy links OpenBLAS (as `libscipy_openblas*` in numpy's wheels). OpenBLAS 0.3.27+ exports
`openblas_set_num_threads_local(n)`, which sets the thread count of BLAS calls made *from
the calling thread* and returns the previous one. `limit_this_thread(n)` finds that symbol
in the libraries already loaded in the process (read from /proc/self/maps, opened with
ctypes) and applies it around a block. Where it cannot be found (another BLAS, no /proc),
it does nothing. An explicit OPENBLAS_NUM_THREADS in the environment is respected: nothing
is changed then either.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

SYMBOLS = ("openblas_set_num_threads_local",)


@functools.cache
def _setter():
    """The per-thread setter of the loaded OpenBLAS, or None."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return None
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
        for name in SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                fn.restype = ctypes.c_int
                return fn
    return None


@contextmanager
def limit_this_thread(threads: int) -> Iterator[None]:
    """BLAS calls from this thread use at most `threads` threads inside the block."""
    setter = _setter()
    if setter is None:
        yield
        return
    previous = setter(max(1, threads))
    try:
        yield
    finally:
        setter(previous if previous > 0 else max(1, threads))
