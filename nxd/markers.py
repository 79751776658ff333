"""Pipeline cut points and recomputation segments: the structure a model gives the engine.

- `pipeline_cut(m, name)`: a pipeline stage may end here, after the part of the model named
  `name` (as NxD's `pipeline_cuts` name the layer that ends a stage: `model.pipeline_cuts:
  [name]` in the YAML cuts here; without it the engine chooses among the cut points by the
  stages' FLOPs). The values built before a cut and used after it cross to the next stage
  (their gradients come back); values computed from the data inputs and constants alone
  are rebuilt by the stage that reads them instead.
- `pipeline_chunks(m, n, name, build, combine)`: a computation split by columns into `n`
  chunks with a cut point between each (the built-in decoder's projections): where a stage
  boundary falls inside, each side builds its chunks (`build(chunks)`, on its part of the
  weights) and `combine` joins the results; otherwise one `build(range(n))`.
- `checkpoint(m, granularity)`: the ops built inside form one recomputation segment
  (NxD's activation checkpointing): with `activations_checkpoint_granularity` equal to
  `granularity` (`full`: whole layers; `selective`: inner parts such as the attention's
  scores) the backward recomputes them from the segment's inputs instead of keeping them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from nxcc.ir.core import Value
from nxcc.nxd.model import Model, ModelError

GRANULARITIES = ("full", "selective")


def pipeline_cut(m: Model, name: str) -> None:
    """A cut point after the part of the model named `name` (see the module docstring)."""
    m.cut_point(name)


@contextmanager
def checkpoint(m: Model, granularity: str = "full") -> Iterator[None]:
    """The ops built in the `with` block form one recomputation segment."""
    if granularity not in GRANULARITIES:
        raise ModelError(f"checkpoint granularity {granularity!r} is not one of "
                         f"{', '.join(GRANULARITIES)}")
    with m.recompute(granularity):
        yield


def pipeline_chunks(m: Model, n: int, name: str, build: Callable[[range], Value],
                    combine: Callable[[Value, Value], Value], allowed: bool = True) -> Value:
    """`n` chunks of one computation, with cut points `name.0` .. `name.(n-2)` between them
    (see the module docstring); `allowed` False: no stage may start inside (too few columns
    on a rank). The ops after the call belong to the last chunk's piece."""
    first = m.piece
    inner = [c for c in range(1, n) if first + c in m.cuts]
    if inner and not allowed:
        raise ModelError(f"a pipeline cut inside {name} needs at least {n} of its columns on "
                         "each rank")
    bounds = [0, *inner, n]
    total: Value | None = None
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        while m.piece < first + lo:
            m.cut_point(f"{name}.{m.piece - first}", allowed)
        part = build(range(lo, hi))
        total = part if total is None else combine(total, part)
    while m.piece < first + n - 1:
        m.cut_point(f"{name}.{m.piece - first}", allowed)
    assert total is not None
    return total
