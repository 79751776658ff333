"""A compile's garbage-collector setting: no cyclic collection while a module is built.

A compile allocates millions of small objects (ops, values, types, attributes) that live
until it ends, and makes almost no cyclic garbage: ops a pass removes are unlinked from
their results (`passes/manager.py`), so reference counting frees them. Measured with
`gc.DEBUG_SAVEALL`, everything the collector found during and after whole compiles was the
module itself and a few dozen objects: 4,021 objects for the BERT-size encoder, 742 for
examples/mlp.onnx at -lnc 2, none at all inside a 100,000-op chain's compile. A collection
during a compile therefore only walks live objects, and those walks made a compile
superlinear in the program's size (CPython's default thresholds: a chain of 100,000
elementwise ops took 22.6x the CPU time of 10,000, `bench/compile_scaling.py`; with a
first-generation threshold of 100,000 the walks still cost 0.3 s of the 100,000-op
compile, and one older-generation walk 0.5 s). The collector is off for the block and on
again (if it was) when the block ends; what a compile leaves is collected afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def compile_gc() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled; it is enabled again on the
    way out (exception or not) if it was enabled before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
