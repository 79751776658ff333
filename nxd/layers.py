"""Parallel layers (NxD Core's `parallel_layers.layers`) and the replicated norms.

Each layer declares its parameters with `Model.parameter` when constructed (a layer called
twice uses the same weights) and builds ops when called. Products are `x @ W` with W
[in_features, out_features] (the transpose of PyTorch's layout) over the last dimension of
`x`; every other dimension is carried through. Parameter names: `name` for the weight and
`name + "_bias"` for the bias unless `bias_name` says otherwise (the built-in decoder's
names); the norms' are `name.weight` and `name.bias`.

- `ColumnParallelLinear`: W split by columns. Input [..., in] replicated, or with
  `sequence_parallel_enabled` in the sequence-parallel region (`mappings`); output
  [..., out / TP] (this rank's columns, the tensor-parallel region), or with
  `gather_output` [..., out] replicated.
- `RowParallelLinear`: W split by rows. Input [..., in / TP] (`input_is_parallel`: this
  rank's features, as a column-parallel layer leaves them) or [..., in] replicated (split
  here); output [..., out]: summed over TP (replicated), or with `sequence_parallel_enabled`
  reduce-scattered into the sequence-parallel region. The bias is added after the sum.
- `ParallelEmbedding`: the table [num_embeddings, dim] split by rows (vocabulary-parallel);
  ids [...] (any integer type, each in [0, num_embeddings)) -> [..., dim], summed over TP
  (replicated), or with `sequence_parallel_enabled` reduce-scattered along dimension 1.
- `LayerNorm`, `RMSNorm`: over the last dimension, replicated weights; used in the
  sequence-parallel region their gradients are summed over TP by the engine (any replicated
  parameter combined with a value that differs between ranks is).
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.nxd import mappings
from nxcc.nxd.model import Model, ModelError
from nxcc.nxd.params import INIT_STD, Segment
from nxcc.passes.autodiff.losses import reduce_all


def matmul(m: Model, x: Value, w: Value) -> Value:
    """x [..., k] @ w [k, n] -> [..., n]."""
    return m.b.dot_general(x, w, lhs_contracting_dims=(x.type.rank - 1,),
                           rhs_contracting_dims=(0,))


def feature(m: Model, w: Value, shape: Sequence[int]) -> Value:
    """A [features] vector broadcast along the last dimension of `shape`."""
    return m.b.broadcast_in_dim(w, shape=tuple(shape), broadcast_dimensions=(len(shape) - 1,))


def chunk_columns(width: int, first: int, stop: int, chunks: int) -> tuple[int, int]:
    """Columns [lo, hi) of chunks [first, stop) of `chunks` over `width` columns."""
    return first * width // chunks, stop * width // chunks


def _segments(features: int | Sequence[int | Segment]) -> tuple[Segment, ...]:
    if isinstance(features, int):
        return (Segment(features),)
    return tuple(s if isinstance(s, Segment) else Segment(int(s)) for s in features)


class _Split:
    """A weight split along `axis` over TP, its optional bias split as it (or replicated),
    and the pipeline chunks it may be cut into."""

    def __init__(self, m: Model, name: str, shape: tuple[int, int], axis: int,
                 segments: tuple[Segment, ...], bias: str | None, bias_split: bool,
                 init: str, std: float, chunks: int, chunks_span_segments: bool) -> None:
        self.m, self.name, self.shape, self.axis = m, name, shape, axis
        self.segments, self.bias_name, self.bias_split = segments, bias, bias_split
        self.init, self.std = init, std
        self.chunks, self.span = chunks, chunks_span_segments
        self.weight = self._weight(None)
        self.bias = self._bias(None) if bias is not None else None

    def _weight(self, part: tuple[int, int] | None) -> Value:
        return self.m.parameter(self.name, self.shape, axis=self.axis, segments=self.segments,
                                init=self.init, std=self.std, part=part,
                                part_spans_segments=self.span, pipeline_chunks=self.chunks)

    def _bias(self, part: tuple[int, int] | None) -> Value:
        assert self.bias_name is not None
        size = self.shape[1]
        if not self.bias_split:
            return self.m.parameter(self.bias_name, (size,), init="zeros")
        return self.m.parameter(self.bias_name, (size,), axis=0, segments=self.segments,
                                init="zeros", part=part, part_spans_segments=self.span,
                                pipeline_chunks=self.chunks)

    def local_width(self) -> int:
        """Columns (rows for a row split) of this rank's slice that chunks are cut from:
        the whole slice, or one segment's share."""
        tp = self.m.tp_size
        sizes = [s.length * s.replicas // tp for s in self.segments]
        return sum(sizes) if self.span else min(sizes)

    def part(self, chunk: range) -> tuple[int, int] | None:
        """The part of the slice chunks `chunk` of `self.chunks` hold (None: all)."""
        if chunk.start == 0 and chunk.stop == self.chunks:
            return None
        if not 0 <= chunk.start < chunk.stop <= self.chunks:
            raise ModelError(f"{self.name}: chunks {chunk.start}..{chunk.stop - 1} of "
                             f"{self.chunks}")
        return chunk_columns(self.local_width(), chunk.start, chunk.stop, self.chunks)


class ColumnParallelLinear:
    """y = x @ W + b, W [in_features, out_features] split by columns (see the module
    docstring for the layouts). `out_features` may be a list of fused outputs (ints or
    `Segment`s, each split over the ranks on its own, so rank r holds its share of each in
    order; `gather_output` then is refused, as the gathered columns would be in rank
    order). `pipeline_chunks` > 1: a pipeline cut may fall between that many column chunks
    (`columns`, `nxd.pipeline_chunks`); `chunks_span_segments` cuts the chunks from the
    rank's whole slice instead of from each segment."""

    def __init__(self, m: Model, name: str, in_features: int,
                 out_features: int | Sequence[int | Segment], *, bias: bool = True,
                 gather_output: bool = True, sequence_parallel_enabled: bool = False,
                 init: str = "normal", std: float = INIT_STD, bias_name: str | None = None,
                 pipeline_chunks: int = 1, chunks_span_segments: bool = False) -> None:
        segments = _segments(out_features)
        if gather_output and len(segments) > 1:
            raise ModelError(f"{name}: gather_output of a fused projection ({len(segments)} "
                             "outputs) would interleave them by rank")
        total = sum(s.length for s in segments)
        self.m, self.gather_output = m, gather_output
        self.sequence_parallel_enabled = sequence_parallel_enabled
        self.w = _Split(m, name, (in_features, total), 1, segments,
                        (bias_name or f"{name}_bias") if bias else None, True, init, std,
                        pipeline_chunks, chunks_span_segments)
        self.weight, self.bias = self.w.weight, self.w.bias

    def enter(self, x: Value) -> Value:
        """`x` moved into the tensor-parallel region (all-gathered along the sequence with
        `sequence_parallel_enabled`, else `tp_copy`)."""
        if self.sequence_parallel_enabled:
            return mappings.gather_from_sequence_parallel_region(self.m, x)
        return mappings.copy_to_tensor_model_parallel_region(self.m, x)

    def columns(self, h: Value, chunk: range | None = None) -> Value:
        """h (already in the tensor-parallel region, `enter`) @ this rank's columns of W
        (+ bias), or only those of chunks `chunk` of `pipeline_chunks`."""
        part = None if chunk is None else self.w.part(chunk)
        w = self.weight if part is None else self.w._weight(part)
        y = matmul(self.m, h, w)
        if self.w.bias_name is None:
            return y
        bias = self.bias if part is None else self.w._bias(part)
        assert bias is not None
        return self.m.b.add(y, feature(self.m, bias, y.type.shape))

    def __call__(self, x: Value) -> Value:
        y = self.columns(self.enter(x))
        if self.gather_output:
            return mappings.gather_from_tensor_model_parallel_region(self.m, y)
        return self.m.mark_local(y)


class RowParallelLinear:
    """y = x @ W + b, W [in_features, out_features] split by rows (see the module
    docstring). `pipeline_chunks` > 1: a pipeline cut may fall between that many row chunks
    (`rows` builds a chunk's partial product, `reduce` the sum and the bias)."""

    def __init__(self, m: Model, name: str, in_features: int | Sequence[int | Segment],
                 out_features: int, *, bias: bool = True, input_is_parallel: bool = False,
                 sequence_parallel_enabled: bool = False, init: str = "normal",
                 std: float = INIT_STD, bias_name: str | None = None,
                 pipeline_chunks: int = 1) -> None:
        segments = _segments(in_features)
        total = sum(s.length for s in segments)
        self.m, self.input_is_parallel = m, input_is_parallel
        self.sequence_parallel_enabled = sequence_parallel_enabled
        self.w = _Split(m, name, (total, out_features), 0, segments,
                        (bias_name or f"{name}_bias") if bias else None, False, init, std,
                        pipeline_chunks, False)
        self.weight, self.bias = self.w.weight, self.w.bias

    def rows(self, x: Value, chunk: range | None = None) -> Value:
        """This rank's partial product: x (this rank's features, or those of chunks `chunk`)
        @ its rows of W; not yet summed over TP, no bias."""
        part = None if chunk is None else self.w.part(chunk)
        w = self.weight if part is None else self.w._weight(part)
        return self.m.mark_local(matmul(self.m, x, w))

    def reduce(self, partial: Value) -> Value:
        """The sum over TP of the partial products (reduce-scattered along the sequence
        with `sequence_parallel_enabled`), plus the bias."""
        if self.sequence_parallel_enabled:
            y = mappings.reduce_scatter_to_sequence_parallel_region(self.m, partial)
        else:
            y = mappings.reduce_from_tensor_model_parallel_region(self.m, partial)
        if self.bias is None:
            return y
        return self.m.b.add(y, feature(self.m, self.bias, y.type.shape))

    def __call__(self, x: Value) -> Value:
        if not self.input_is_parallel:
            x = mappings.scatter_to_tensor_model_parallel_region(self.m, x)
        return self.reduce(self.rows(x))


class ParallelEmbedding:
    """A vocabulary-parallel lookup table (see the module docstring): rows outside this
    rank's range give zeros, and the sum over ranks is the embedding."""

    def __init__(self, m: Model, name: str, num_embeddings: int, embedding_dim: int, *,
                 sequence_parallel_enabled: bool = False, std: float = INIT_STD) -> None:
        self.m, self.num_embeddings = m, num_embeddings
        self.sequence_parallel_enabled = sequence_parallel_enabled
        self.weight = m.parameter(name, (num_embeddings, embedding_dim), axis=0, std=std)

    def __call__(self, ids: Value) -> Value:
        m, b = self.m, self.m.b
        if not ids.type.dtype.is_integer:
            raise ModelError(f"embedding ids must be integers, got {ids.type}")
        m.bound_input(ids, self.num_embeddings)
        rows, hidden = self.weight.type.shape
        rank = ids.type.rank
        index, in_range = ids, None
        if m.tp_size > 1:
            local = b.subtract(ids, b.splat(m.tp_rank * rows, ids.type))
            in_range = b.and_(b.compare(local, b.splat(0, ids.type), direction="GE"),
                              b.compare(local, b.splat(rows, ids.type), direction="LT"))
            index = b.select(in_range, local, b.splat(0, ids.type))
        x = b.gather(self.weight, index, offset_dims=(rank,), collapsed_slice_dims=(0,),
                     start_index_map=(0,), index_vector_dim=rank, slice_sizes=(1, hidden))
        if in_range is not None:
            mask = b.broadcast_in_dim(in_range, shape=x.type.shape,
                                      broadcast_dimensions=tuple(range(rank)))
            x = b.select(mask, x, b.splat(0.0, x.type))
        m.mark_local(x)
        if self.sequence_parallel_enabled:
            return mappings.reduce_scatter_to_sequence_parallel_region(m, x)
        return mappings.reduce_from_tensor_model_parallel_region(m, x)


class _Norm:
    def __init__(self, m: Model, name: str, dim: int, eps: float, bias: bool) -> None:
        self.m, self.eps = m, eps
        self.weight = m.parameter(f"{name}.weight", (dim,), init="ones")
        self.bias = m.parameter(f"{name}.bias", (dim,), init="zeros") if bias else None

    def _scale(self, x: Value) -> Value:
        b, shape = self.m.b, x.type.shape
        h = float(shape[-1])
        last = (len(shape) - 1,)
        square = reduce_all(b, b.multiply(x, x), ops.add, last)
        var = b.divide(square, b.splat(h, square.type))
        inv = b.rsqrt(b.add(var, b.splat(self.eps, var.type)))
        lead = tuple(range(len(shape) - 1))
        inv = b.broadcast_in_dim(inv, shape=shape, broadcast_dimensions=lead)
        y = b.multiply(b.multiply(x, inv), feature(self.m, self.weight, shape))
        return y if self.bias is None else b.add(y, feature(self.m, self.bias, shape))


class LayerNorm(_Norm):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension."""

    def __init__(self, m: Model, name: str, dim: int, eps: float = 1e-5,
                 bias: bool = True) -> None:
        super().__init__(m, name, dim, eps, bias)

    def __call__(self, x: Value) -> Value:
        b, shape = self.m.b, x.type.shape
        last = (len(shape) - 1,)
        total = reduce_all(b, x, ops.add, last)
        mean = b.divide(total, b.splat(float(shape[-1]), total.type))
        x = b.subtract(x, b.broadcast_in_dim(mean, shape=shape,
                                             broadcast_dimensions=tuple(range(len(shape) - 1))))
        return self._scale(x)


class RMSNorm(_Norm):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension (no bias)."""

    def __init__(self, m: Model, name: str, dim: int, eps: float = 1e-5) -> None:
        super().__init__(m, name, dim, eps, False)

    def __call__(self, x: Value) -> Value:
        return self._scale(x)
