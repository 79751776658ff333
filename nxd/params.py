"""Parameters of a model built from the primitives: full shapes, tensor-parallel slices, parts.

A `ParamSpec` says everything the engine needs of one parameter without its values: its
full shape, the axis split over the tensor-parallel ranks (None: every rank holds it whole),
how that axis is made of *segments* (a fused weight such as q | k | v is split segment by
segment, so rank r holds its share of each, in order; a segment's units may be repeated
`replicas` times before the split, as replicated key/value heads are), how its values are
drawn, and, when a pipeline cut falls inside a chunked projection (`layers.pipeline_chunks`),
the *part* of the rank's slice one stage holds (columns [lo, hi) of each segment of the slice,
or of the whole slice with `part_spans_segments`).

Every layout starts from the same numbers: `init_full_weights(specs, seed)` draws the whole
model once, in declaration order (normal(0, std) for `normal`/`scaled`, ones, zeros);
`shard` cuts one rank's slice (and part); `join_parts` puts consecutive stages' parts back
together and `unshard` the ranks' slices (of parameters, or of their gradients); `owned_mask`
marks the entries a rank counts when a sum over ranks must count each entry once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

INIT_STD = 0.02
INITS = ("normal", "scaled", "ones", "zeros")


@dataclass(frozen=True)
class Segment:
    """A run of `length` entries along the split axis, in units of `unit` (a head's size),
    each unit repeated `replicas` times before the split (replicated key/value heads)."""

    length: int
    unit: int = 1
    replicas: int = 1


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: full shape, the axis split over tensor-parallel ranks (None:
    replicated), the segments of that axis, its initial values (`init`, `std` for the normal
    ones) and its pipeline part (see the module docstring). `pipeline_chunks` > 1: a
    pipeline cut may fall between that many column chunks of it."""

    name: str
    shape: tuple[int, ...]
    axis: int | None = None
    segments: tuple[Segment, ...] = ()
    init: str = "normal"  # normal | scaled | ones | zeros
    # a pipeline stage's part: entries [lo, hi) of each segment of the rank's slice, or of
    # the whole slice (`part_spans_segments`: a fused q/k/v projection)
    part: tuple[int, int] | None = None
    part_spans_segments: bool = False
    std: float = INIT_STD
    pipeline_chunks: int = 1

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ValueError(f"parameter {self.name}: init {self.init!r} is not one of "
                             f"{', '.join(INITS)}")
        if self.axis is not None and not self.segments:
            object.__setattr__(self, "segments", (Segment(self.shape[self.axis]),))

    @property
    def replicated(self) -> bool:
        return self.axis is None

    def local_shape(self, tp: int) -> tuple[int, ...]:
        """The shape of one rank's slice (or of its pipeline part)."""
        if self.axis is None:
            return self.shape
        shape = list(self.shape)
        if self.part is None:
            shape[self.axis] = sum(s.length * s.replicas // tp for s in self.segments)
        else:
            count = 1 if self.part_spans_segments else len(self.segments)
            shape[self.axis] = (self.part[1] - self.part[0]) * count
        return tuple(shape)

    def whole(self) -> ParamSpec:
        """The spec without a pipeline part."""
        return replace(self, part=None)

    def split_error(self, tp: int) -> str | None:
        """Why the split axis cannot be cut over `tp` ranks (None: it can)."""
        for seg in self.segments:
            units = seg.length // seg.unit * seg.replicas
            what = f"parameter {self.name}: {units} {'units' if seg.unit > 1 else 'entries'}"
            if seg.length % seg.unit or units % tp:
                return f"{what} along axis {self.axis} do not divide by tensor parallel size {tp}"
            if seg.replicas > 1 and units != tp:
                return (f"{what} (each repeated {seg.replicas} times) must equal the tensor "
                        f"parallel size {tp}")
        return None


def _segments(spec: ParamSpec, arr: np.ndarray) -> list[np.ndarray]:
    """`arr` (one rank's slice of `spec`, or a pipeline part of it) cut into what a part is
    taken from: the whole, or its segments (all as wide where that is done)."""
    if spec.part_spans_segments or spec.axis is None:
        return [arr]
    return np.split(arr, len(spec.segments), axis=spec.axis)


def take_part(spec: ParamSpec, local: np.ndarray) -> np.ndarray:
    """The pipeline part `spec.part` of one rank's whole slice `local` (itself when the
    spec has no part)."""
    if spec.part is None or spec.axis is None:
        return local
    lo, hi = spec.part
    pieces = [np.take(seg, range(lo, hi), axis=spec.axis) for seg in _segments(spec, local)]
    return np.ascontiguousarray(np.concatenate(pieces, axis=spec.axis))


def join_parts(spec: ParamSpec, parts: Sequence[np.ndarray]) -> np.ndarray:
    """One rank's whole slice of `spec` from the pipeline parts of it that consecutive
    stages hold, in stage order (one part: itself)."""
    if len(parts) == 1 or spec.axis is None:
        return np.array(parts[0])
    split = [_segments(spec, p) for p in parts]
    return np.concatenate([np.concatenate([s[k] for s in split], axis=spec.axis)
                           for k in range(len(split[0]))], axis=spec.axis)


def init_full_weights(specs: Sequence[ParamSpec], seed: int, dtype: str = "float32"
                      ) -> dict[str, np.ndarray]:
    """The whole model's initial weights, drawn in `specs` order from `seed` (the first
    spec of each name; parts are drawn whole)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.name in out:
            continue
        if spec.init == "ones":
            arr = np.ones(spec.shape)
        elif spec.init == "zeros":
            arr = np.zeros(spec.shape)
        else:
            arr = rng.normal(0.0, spec.std, spec.shape)
        out[spec.name] = arr.astype(dtype)
    return out


def _units(arr: np.ndarray, axis: int, seg: Segment) -> np.ndarray:
    """The segment's entries with each unit repeated `replicas` times."""
    if seg.replicas == 1:
        return arr
    shape = list(arr.shape)
    blocks = np.moveaxis(arr, axis, 0).reshape(seg.length // seg.unit, seg.unit, -1)
    blocks = np.repeat(blocks, seg.replicas, axis=0)
    moved = [shape[axis] * seg.replicas, *(s for i, s in enumerate(shape) if i != axis)]
    return np.moveaxis(blocks.reshape(moved), 0, axis)


def shard(spec: ParamSpec, full: np.ndarray, rank: int, tp: int) -> np.ndarray:
    """Rank `rank`'s slice of parameter `spec` (its pipeline part; a copy)."""
    if spec.axis is None:
        return np.array(full)
    pieces, offset = [], 0
    for seg in spec.segments:
        part = np.take(full, range(offset, offset + seg.length), axis=spec.axis)
        offset += seg.length
        wide = _units(part, spec.axis, seg)
        size = wide.shape[spec.axis] // tp
        pieces.append(np.take(wide, range(rank * size, (rank + 1) * size), axis=spec.axis))
    return take_part(spec, np.ascontiguousarray(np.concatenate(pieces, axis=spec.axis)))


def unshard(spec: ParamSpec, parts: Sequence[np.ndarray]) -> np.ndarray:
    """The full parameter from every rank's whole slice (replicated: rank 0's; a repeated
    unit: its first copy; join pipeline parts first with `join_parts`)."""
    if spec.axis is None:
        return np.array(parts[0])
    tp = len(parts)
    out, starts = [], [0] * tp
    for seg in spec.segments:
        size = seg.length * seg.replicas // tp
        wide = np.concatenate([np.take(p, range(s, s + size), axis=spec.axis)
                               for p, s in zip(parts, starts, strict=True)], axis=spec.axis)
        starts = [s + size for s in starts]
        if seg.replicas > 1:
            keep = [u * seg.unit * seg.replicas + j for u in range(seg.length // seg.unit)
                    for j in range(seg.unit)]
            wide = np.take(wide, keep, axis=spec.axis)
        out.append(wide)
    return np.concatenate(out, axis=spec.axis)


def owned_mask(spec: ParamSpec, rank: int, tp: int) -> np.ndarray:
    """bool, the shape of rank `rank`'s slice: the entries this rank counts when a sum over
    every rank must count each parameter entry once (a global gradient norm). Replicated
    parameters belong to rank 0, a repeated unit (key/value head) to the lowest rank
    holding it."""
    local = spec.local_shape(tp)
    if spec.axis is None:
        return np.full(local, rank == 0)
    flat = ParamSpec(spec.name, (spec.shape[spec.axis],), 0, spec.segments)
    index = np.arange(spec.shape[spec.axis])
    lower = {int(i) for q in range(rank) for i in shard(flat, index, q, tp)}
    mine = shard(replace(flat, part=spec.part, part_spans_segments=spec.part_spans_segments),
                 index, rank, tp)
    keep = np.array([int(i) not in lower for i in mine])
    shape = [1] * len(local)
    shape[spec.axis] = len(keep)
    return np.broadcast_to(keep.reshape(shape), local).copy()


def replicated_columns(spec: ParamSpec, tp: int) -> list[tuple[int, int]]:
    """The runs [lo, hi) of columns (along the split axis) of one rank's slice, or of its
    pipeline part, that hold repeated units (replicated key/value heads), whose gradients
    the ranks holding copies of one unit sum."""
    if spec.axis is None or all(s.replicas == 1 for s in spec.segments):
        return []
    flags: list[bool] = []
    for seg in spec.segments:
        flags += [seg.replicas > 1] * (seg.length * seg.replicas // tp)
    if spec.part is not None:
        lo, hi = spec.part
        if spec.part_spans_segments:
            flags = flags[lo:hi]
        else:
            offsets = np.cumsum([0, *(s.length * s.replicas // tp for s in spec.segments)])
            flags = [f for k in range(len(spec.segments))
                     for f in flags[offsets[k] + lo:offsets[k] + hi]]
    runs, start = [], None
    for i, f in enumerate([*flags, False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            runs.append((start, i))
            start = None
    return runs
