"""A compile's garbage-collector setting: fewer young collections while a module is built.

A compile allocates millions of small objects (ops, values, types, attributes) that live
until it ends. With CPython's default thresholds (700, 10, 10) the collector walks the
growing heap again and again, and that walk made a compile superlinear in the program's
size: a chain of 100,000 elementwise ops took 22.6x the CPU time of 10,000
(`bench/compile_scaling.py`), 8.9x with a first-generation threshold of 100,000. Cycles are
still collected, only less often; the previous thresholds come back when the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: (generation 0, 1, 2) thresholds while compiling (the mypy and Instagram style of setting).
COMPILE_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def compile_gc() -> Iterator[None]:
    """Run the block with `COMPILE_THRESHOLDS` (never lower than the current ones); the
    thresholds in force before are restored on the way out, exception or not."""
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(COMPILE_THRESHOLDS, before, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
