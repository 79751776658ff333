"""`Model`: one rank's model as its build function writes it, with the primitives.

A model is a Python function `build(m: Model, **args)` that builds the forward of ONE
tensor-parallel rank as IR and returns its loss as `(loss_sum, count)` (two float scalars:
the sum of the per-example losses and how many examples were counted; the engine divides by
the count over the whole global batch). It declares through `m`:

- its data inputs, `m.input(name, shape, dtype)`: [micro_batch, *shape], one row of each per
  example; the engine feeds them from the data, and each pipeline stage gets those it reads;
- its parameters, `m.parameter(name, full_shape, axis=...)` (or through the layers of
  `nxcc.nxd`, which declare theirs): the value is this rank's slice;
- pipeline cut points (`nxd.pipeline_cut`) and recomputation segments (`nxd.checkpoint`);
- values no gradient flows through (`m.stop_gradient`).
Everything else is ordinary IR built with `m.b` (an `nxcc.ir.builder.Builder`).

`m.tp_rank`, `m.tp_size`, `m.sequence_parallel`, `m.kv_replicator` and `m.micro_batch` say
which rank is built; `m.groups` are the group-local replica groups of its collectives
([[0 .. TP-1]]), which the engine binds to the rank's TP group. The build function must
build the same model (the same parameters, cut points and ops up to the rank's slices) for
every rank: the engine calls it once per rank, and for each pipeline stage takes the part
between two cut points (`nxcc.nxd.pipeline`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.nxd.params import INIT_STD, ParamSpec, Segment


class ModelError(ValueError):
    """The model cannot be built as asked (the message names the part and the numbers)."""


def as_dtype(dtype: DType | str) -> DType:
    """A DType from itself, its IR name (`s32`) or its numpy name (`int32`)."""
    if isinstance(dtype, DType):
        return dtype
    try:
        return DType(dtype)
    except ValueError:
        pass
    try:
        return DType.from_numpy(np.dtype(dtype))
    except (TypeError, ValueError):
        raise ModelError(f"unknown element type {dtype!r}") from None


@dataclass(frozen=True)
class RankSpec:
    """The rank a model is built for: its tensor-parallel rank and degree, sequence
    parallelism, the key/value head replication (NxD's kv_replicator) and the micro-batch
    size (the rows of every input)."""

    tp_rank: int = 0
    tp_size: int = 1
    sequence_parallel: bool = False
    kv_replicator: int = 1
    micro_batch: int = 1


@dataclass(frozen=True)
class InputSpec:
    """One data input: its name, type [micro_batch, ...] and, for ids, the bound they must
    lie below (`ignore`: a value also allowed, such as the labels' -100)."""

    name: str
    type: TensorType
    bound: int | None = None
    ignore: int | None = None


@dataclass(frozen=True)
class Marker:
    """A pipeline cut point: its name, where the forward's body stood when it was placed
    (ops before it belong to earlier pieces), and whether a stage may start there."""

    name: str
    position: int
    allowed: bool = True


@dataclass
class RecomputeSegment:
    """A recomputation segment: ops [start, stop) of the forward, and its granularity."""

    granularity: str
    start: int
    stop: int = -1


@dataclass
class _Declared:
    spec: ParamSpec
    value: Value


@dataclass
class Model:
    """One rank's model being built (see the module docstring)."""

    rank: RankSpec = field(default_factory=RankSpec)
    cuts: frozenset[int] = frozenset()
    dtype: DType = DType.F32
    name: str = "model"

    def __post_init__(self) -> None:
        r = self.rank
        if r.tp_size < 1 or not 0 <= r.tp_rank < r.tp_size:
            raise ModelError(f"tp_rank {r.tp_rank} is not in 0..{r.tp_size - 1}")
        self.fn = Function("forward", [])
        self.module = Module(self.name, {"forward": self.fn}, "forward")
        self.b = Builder(self.module, self.fn)
        self.inputs: list[InputSpec] = []
        self.input_values: list[Value] = []
        self.declared: list[_Declared] = []
        self._by_key: dict[tuple[str, tuple[int, int] | None], _Declared] = {}
        self.markers: list[Marker] = []
        self.segments: list[RecomputeSegment] = []
        self.stops: list[Value] = []
        self.local: set[int] = set()

    # the rank

    @property
    def tp_rank(self) -> int:
        return self.rank.tp_rank

    @property
    def tp_size(self) -> int:
        return self.rank.tp_size

    @property
    def sequence_parallel(self) -> bool:
        """Sequence parallelism is on (and TP > 1)."""
        return self.rank.sequence_parallel and self.rank.tp_size > 1

    @property
    def kv_replicator(self) -> int:
        return self.rank.kv_replicator

    @property
    def micro_batch(self) -> int:
        return self.rank.micro_batch

    @property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        return (tuple(range(self.tp_size)),)

    @property
    def piece(self) -> int:
        """The piece being built: the number of cut points placed so far."""
        return len(self.markers)

    # declarations

    def input(self, name: str, shape: Sequence[int], dtype: DType | str = DType.S32) -> Value:
        """A data input [micro_batch, *shape] of `dtype` (a DType or its numpy name)."""
        if name in {i.name for i in self.inputs}:
            raise ModelError(f"input {name!r} is declared twice")
        dt = as_dtype(dtype)
        v = Value(TensorType(dt, (self.micro_batch, *shape)), name)
        self.inputs.append(InputSpec(name, v.type))
        self.input_values.append(v)
        self.fn.params.append(v)
        return v

    def bound_input(self, v: Value, bound: int, ignore: int | None = None) -> None:
        """When `v` is a data input, its ids must lie in [0, bound) (or equal `ignore`)."""
        for i, x in enumerate(self.input_values):
            if x is v:
                old = self.inputs[i]
                keep = bound if old.bound is None else min(old.bound, bound)
                self.inputs[i] = InputSpec(old.name, old.type, keep, ignore)

    def parameter(self, name: str, shape: Sequence[int], *, axis: int | None = None,
                  segments: Sequence[Segment] = (), init: str = "normal",
                  std: float = INIT_STD, part: tuple[int, int] | None = None,
                  part_spans_segments: bool = False, pipeline_chunks: int = 1) -> Value:
        """This rank's slice of parameter `name` (full shape `shape`), split along `axis`
        over the TP ranks (None: every rank holds it whole). Declaring a name again gives
        the same value (a shared weight) when the declaration agrees."""
        spec = ParamSpec(name, tuple(shape), axis, tuple(segments), init, part,
                         part_spans_segments, std, pipeline_chunks)
        key = (name, part)
        found = self._by_key.get(key)
        if found is not None:
            if found.spec != spec:
                raise ModelError(f"parameter {name!r} is declared twice with different "
                                 f"shapes or splits ({found.spec.shape} and {spec.shape})")
            return found.value
        earlier = next((d.spec for d in self.declared if d.spec.name == name), None)
        if earlier is not None and earlier.whole() != spec.whole():
            raise ModelError(f"parameter {name!r} is declared twice with different shapes "
                             f"or splits ({earlier.shape} and {spec.shape})")
        if axis is not None and not 0 <= axis < len(spec.shape):
            raise ModelError(f"parameter {name!r}: axis {axis} of a {len(spec.shape)}-d shape")
        problem = spec.split_error(self.tp_size)
        if problem is not None:
            raise ModelError(problem)
        v = Value(TensorType(self.dtype, spec.local_shape(self.tp_size)), name)
        if axis is not None and self.tp_size > 1:
            self.local.add(id(v))
        d = _Declared(spec, v)
        self.declared.append(d)
        self._by_key[key] = d
        self.fn.params.append(v)
        return v

    def stop_gradient(self, v: Value) -> Value:
        """`v`, through which no gradient flows (a softmax's max shift)."""
        self.stops.append(v)
        return v

    def mark_local(self, v: Value) -> Value:
        """`v`, whose value differs between the TP ranks (each holds its part of a whole):
        the primitives mark what they make so; a replicated parameter combined with such a
        value gets its gradient summed over the TP group."""
        if self.tp_size > 1:
            self.local.add(id(v))
        return v

    # structure

    def cut_point(self, name: str, allowed: bool = True) -> None:
        """A pipeline cut point here (see `nxd.pipeline_cut`)."""
        if any(mk.name == name for mk in self.markers):
            raise ModelError(f"pipeline cut point {name!r} is placed twice")
        self.markers.append(Marker(name, len(self.fn.body), allowed))

    @contextmanager
    def recompute(self, granularity: str) -> Iterator[None]:
        """The ops built inside form one recomputation segment (see `nxd.checkpoint`)."""
        seg = RecomputeSegment(granularity, len(self.fn.body))
        try:
            yield
        finally:
            seg.stop = len(self.fn.body)
            if seg.stop > seg.start:
                self.segments.append(seg)

    # reading back

    @property
    def specs(self) -> list[ParamSpec]:
        """Every declared parameter (parts as declared), in declaration order."""
        return [d.spec for d in self.declared]
