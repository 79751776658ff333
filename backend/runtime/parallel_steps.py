"""Large instructions split across the threads a core's BLAS uses.

numpy runs an elementwise loop on one thread, while the matrix products of the same program
use every thread its BLAS has (`OPENBLAS_NUM_THREADS`, or one per CPU). `split_step` cuts
the result of a large instruction into `threads` slabs along one dimension: an elementwise
one (`fused_elementwise`, an op of one element per element: add, exp, select, convert...),
a row op (`softmax`, `layer_norm`) or a `reduce` over trailing dimensions between its rows,
a pool (`reduce_window`) along a dimension it does not pool,
a batch of matrix products between the products (one product between its lhs rows or rhs
columns), a convolution (with its epilogue, `fused_convolution`) between its images or else
its output rows (each slab reading the input rows its windows reach) or else its output
features. It plans each slab with the op's own plan
on views of its operands and the slab, and returns one step running slab 0 on the calling
thread and the others on pooled threads (`core_threads`). numpy releases the GIL inside its
loops, so the slabs run side by side; each element is computed by the same numpy calls as
unsplit (elementwise results, a row op's rows and a row's reduction do not depend on where
a block starts; a product's slab is a BLAS call on a slab of its lhs rows or rhs columns,
which OpenBLAS computes with the same bits as the whole: checked on a transformer's shapes
and layouts, a classifier's row and convolutions' kernel rows), so the results are the
same bits. One exception is OpenBLAS's own: a sum longer than its K block (448 terms with
the SkylakeX kernels) is cut at other places by its threaded driver than by its one-thread
driver, for most lengths other than 32 n and 32 n - 1, so such a product's bits follow
the BLAS's thread count, split or not (a slab's are those of a one-thread machine).

When every matrix product of a function is split (or small), the executor splits its
other instructions too and runs it with the BLAS at one thread (`limit_process(1,
even_when_set=True)`): its threads are then the core's only ones, each BLAS call on one of
them. OpenBLAS's own threads, woken for every call of a batch of small products (32 of
256x64x256 in a GPT's attention scores) and spinning for a while after each, competed with
the slabs for the cores: one GPT training step took 3 s that way on a busy 2-core machine,
8 to 12 with OpenBLAS's two threads. A function with a product that does not split (a
depthwise convolution of one image) splits nothing: the BLAS keeps its threads, as before.

An instruction is split only when each slab has at least `SLAB_WORK` element-passes of
work (its largest array's elements times the passes over memory its op makes, `_passes`)
and reads or writes at least `MIN_SLAB` elements, and the dimension split is not one an
operand broadcasts along in a way the slab could not follow. Handing a slab to a waiting
thread and waiting for it costs about 20 us on a quiet 2-core machine, what one numpy pass
over 180,000 float32 elements takes: a single-pass op (an add, a divide by a constant) is
split from about a million elements, a fused GELU with its erf (some 30 passes) from
about 35,000. The products and convolutions count as `BLAS_PASSES` passes (a
convolution its multiply-adds, `CONV_MACS_PER_ELEMENT` to an element). The worker threads
ignore floating-point errors while they run, as the calling thread does for the whole
program; an exception of a slab is raised on the calling thread once every slab has
finished.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.backend.runtime import float_errors
from nxcc.backend.runtime.core_threads import run_on_threads
from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints, attr_ints2, attr_of
from nxcc.ir.fused_program import parse_program
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.linalg import product_dims
from nxcc.ir.kernels.plan import Plan, Step
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import ElementwiseDef, OpDef

#: elements per slab at least: below this, handing a slab to another thread costs more
#: than it saves
MIN_SLAB = 1 << 16

#: the passes over its elements a product or convolution counts as (so that one splits from
#: 2 x MIN_SLAB elements, as before the work was counted)
BLAS_PASSES = 8

#: element-passes per slab at least: about 70 us of numpy work on one thread, against some
#: 20 us to hand the slab over; a divide of 196,608 float32 elements by a constant took
#: 21 us whole and 49-77 us as two slabs side by side
SLAB_WORK = MIN_SLAB * BLAS_PASSES

#: passes per element of the float32 erf (`ir.kernels.erf`: about 25 numpy calls a block)
#: and of numpy's other transcendental loops (exp, log, tanh: 4x an add's time)
_ERF_PASSES = 24
_TRANSCENDENTAL_PASSES = 4
#: passes of the row ops: softmax (max, subtract, exp as 4, sum, divide), layer norm (two
#: reductions, centring, scaling, the affine pair)
_ROW_PASSES = {ops.softmax: 8, ops.layer_norm: 8}

#: lhs rows of a product below which its slabs cut its rhs columns first (`_product_axes`)
FEW_ROWS = 256

#: a convolution's multiply-adds that count as one element's work against `MIN_SLAB` (a
#: 1x1 convolution of SqueezeNet's 13x13 images, 2.6M of them, takes about 50 us)
CONV_MACS_PER_ELEMENT = 16

#: ops of one result element per operand element (besides the ElementwiseDef family), and
#: copies of one element each (the operand's dims cut where the result's are)
_SAME_SHAPE = (ops.compare, ops.select, ops.clamp, ops.convert, ops.copy)
#: ops computed row by row along their `dimension` attribute
_ROW_OPS = (ops.softmax, ops.layer_norm)
#: convolutions, plain or with their epilogue
_CONV_OPS = (ops.convolution, ops.fused_convolution)
#: ops whose kernels hand their work to the BLAS
_BLAS_OPS = (ops.dot_general, *_CONV_OPS)


def split_step(opdef: OpDef, plan: Plan, args: Sequence[np.ndarray], out: np.ndarray,
               attrs: Mapping[str, AttrValue], ctx: KernelContext, constant: Sequence[bool],
               threads: int, pools: Sequence[ScratchPool] = ()) -> Step | None:
    """The instruction as one step over `threads` slabs run side by side, or None when it
    is not split (another kind of op, too small, a layout the slabs cannot follow, or a
    slab the op's plan does not take). Slab k takes its scratch from `pools[k]` (shared
    with slab k of the function's other instructions, which never run at the same time;
    a pool of its own when not given)."""
    size = _size(opdef, args, out, attrs)
    parts = min(threads, size // MIN_SLAB, size * _passes(opdef, attrs) // SLAB_WORK)
    if parts < 2:
        return None
    layout = _layout(opdef, args, out, attrs)
    if layout is None:
        return None
    dims, axes = layout
    axis = next((a for a in axes if out.shape[a] >= parts), None)
    if axis is None:
        return None
    edges = np.linspace(0, out.shape[axis], parts + 1).astype(int)
    steps = []
    for k, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        sub = [_slab(a, d, axis, lo, hi, out.shape[axis]) for a, d in zip(args, dims,
                                                                        strict=True)]
        if any(s is None for s in sub):
            return None
        slab_attrs = attrs
        if opdef in _CONV_OPS and axis == _rows_axis(attrs):  # its input rows, with a halo
            sub[0], slab_attrs = _input_rows(args[0], args[1], attrs, int(lo), int(hi))
        index = (slice(None),) * axis + (slice(lo, hi),)
        pool = pools[k] if k < len(pools) else ScratchPool()
        step = plan(sub, out[index], slab_attrs, ctx, constant, pool)  # type: ignore[arg-type]
        if step is None:
            return None
        steps.append(step)
    return functools.partial(side_by_side, steps, [f"nxcc-slab{k}" for k in range(parts)])


def _size(opdef: OpDef, args: Sequence[np.ndarray], out: np.ndarray,
          attrs: Mapping[str, AttrValue]) -> int:
    """The instruction's size in elements for `MIN_SLAB`: its largest array's; for a
    convolution, its multiply-adds over `CONV_MACS_PER_ELEMENT` when more (its work is
    its products', not its arrays')."""
    size = max(out.size, *(a.size for a in args))
    if opdef in _CONV_OPS and args[1].size:
        features = args[1].shape[attr_of(attrs, "kernel_output_feature_dim", int)]
        size = max(size, out.size * (args[1].size // features) // CONV_MACS_PER_ELEMENT)
    return size


def _passes(opdef: OpDef, attrs: Mapping[str, AttrValue]) -> int:
    """About how many numpy passes over its elements the op's kernel makes (an add: 1)."""
    if opdef in _BLAS_OPS:
        return BLAS_PASSES
    if opdef in _ROW_PASSES:
        return _ROW_PASSES[opdef]
    if opdef is ops.fused_elementwise:
        return max(1, sum(_element_passes(s.opdef)
                          for s in parse_program(str(attrs["program"])).steps))
    if opdef is ops.reduce_window:
        return max(1, math.prod(attr_ints(attrs, "window_dimensions")))
    if opdef is ops.transpose:
        return 2  # strided reads
    return _element_passes(opdef)


def _element_passes(opdef: OpDef) -> int:
    """Passes of one elementwise op (a step of a fused program)."""
    if opdef is ops.erf:
        return _ERF_PASSES
    if isinstance(opdef, ElementwiseDef) and opdef.precise:
        return _TRANSCENDENTAL_PASSES
    return 1


def _layout(opdef: OpDef, args: Sequence[np.ndarray], out: np.ndarray,
            attrs: Mapping[str, AttrValue]) -> tuple[list[tuple[int, ...]], list[int]] | None:
    """(for each operand, the result dimension each of its dimensions runs along, -1 for
    none; the result dimensions a slab may cut), or None for an op that is not split."""
    every = list(range(out.ndim))
    if opdef is ops.fused_elementwise:
        return [tuple(d) for d in parse_program(str(attrs["program"])).operand_dims], every
    if opdef is ops.dot_general:  # between the products of a batch, lhs rows, rhs columns
        lb, rb, _, _, lfree, rfree = product_dims(attrs, args[0].ndim, args[1].ndim)
        lhs = [lb.index(d) if d in lb else len(lb) + lfree.index(d) if d in lfree else -1
               for d in range(args[0].ndim)]
        rhs = [rb.index(d) if d in rb else len(lb) + len(lfree) + rfree.index(d)
               if d in rfree else -1 for d in range(args[1].ndim)]
        return [tuple(lhs), tuple(rhs)], _product_axes(args[0], lfree, args[1], rfree, len(lb))
    if opdef in _CONV_OPS:
        return _convolution_layout(opdef, args, attrs)
    if opdef is ops.reduce_window and len(args) == 2:  # a pool: along what it does not pool
        plain = [d for d in every if attr_ints(attrs, "window_dimensions")[d] == 1
                 and attr_ints(attrs, "window_strides")[d] == 1
                 and attr_ints(attrs, "base_dilations")[d] == 1
                 and not any(attr_ints2(attrs, "padding")[d])]
        return [tuple(d if d in plain else -1 for d in every), ()], plain
    if opdef is ops.reduce:  # rows: the reduced dims are the trailing ones
        if len(args) != 2 or args[1].ndim or sorted(attr_ints(attrs, "dimensions")) != list(
                range(out.ndim, args[0].ndim)):
            return None
        return [tuple(d if d < out.ndim else -1 for d in range(args[0].ndim)), ()], every
    if opdef is ops.transpose:
        perm = list(attr_ints(attrs, "permutation"))
        return [tuple(perm.index(d) for d in range(len(perm)))], every
    if opdef is ops.broadcast_in_dim:
        return [attr_ints(attrs, "broadcast_dimensions")], every
    if opdef is ops.pad:  # cut along a dimension it does not pad
        edges = zip(*(attr_ints(attrs, k) for k in ("low", "high", "interior")), strict=True)
        return [tuple(every), ()], [d for d, e in enumerate(edges) if not any(e)]
    if isinstance(opdef, ElementwiseDef) or opdef in _SAME_SHAPE or opdef in _ROW_OPS:
        if any(a.shape != out.shape and a.size != 1 for a in args):
            return None
        axes = [a for a in every
                if opdef not in _ROW_OPS or a != attr_of(attrs, "dimension", int)]
        return [tuple(every) if a.shape == out.shape else () for a in args], axes
    return None


def _product_axes(lhs: np.ndarray, lfree: Sequence[int], rhs: np.ndarray,
                  rfree: Sequence[int], batch: int) -> list[int]:
    """The result dimensions a product's slabs may cut, in the order tried: its batch,
    then its lhs rows, then its rhs columns; the columns before the rows when the rows are
    few (under `FEW_ROWS`) and the columns at least twice as many. Each slab packs the
    whole of the operand it does not cut: for BERT's 128 rows against 768x3072 weights,
    halves of the rows took 3.96 ms and halves of the columns 3.53 ms (one BLAS thread
    each); from 256 rows on, halves of the rows were as fast or faster (by 19% at
    1024x2048 against 2048x512)."""
    rows = math.prod(lhs.shape[d] for d in lfree)
    columns = math.prod(rhs.shape[d] for d in rfree)
    lead = list(range(batch))
    row_axes = list(range(batch, batch + len(lfree)))
    column_axes = list(range(batch + len(lfree), batch + len(lfree) + len(rfree)))
    if rows < FEW_ROWS and columns >= 2 * rows:
        return lead + column_axes + row_axes
    return lead + row_axes + column_axes


def _convolution_layout(opdef: OpDef, args: Sequence[np.ndarray],
                        attrs: Mapping[str, AttrValue]
                        ) -> tuple[list[tuple[int, ...]], list[int]] | None:
    """A convolution is cut between its images (lhs batch); else between rows of its
    output (its first spatial dimension: each slab reads the input rows its windows
    reach, `_input_rows`), unless it is a grouped one of a 1x1 window; else between its
    output features (kernel output features: with one group only). A slab of rows keeps
    every output feature, so a choice made by the features' count
    (`conv_tiles.folds_by_copy`) is the whole's. A fused one's epilogue operands are cut
    as its program maps them."""
    a = attrs
    if attr_of(a, "batch_group_count", int) != 1:
        return None
    rank = args[0].ndim
    batch, feature = attr_of(a, "output_batch_dim", int), attr_of(a, "output_feature_dim", int)
    lhs, rhs = [-1] * rank, [-1] * rank
    lhs[attr_of(a, "input_batch_dim", int)] = batch
    axes = [batch]
    rows = _rows_axis(a)
    window = math.prod(args[1].shape[d] for d in attr_ints(a, "kernel_spatial_dims"))
    groups = attr_of(a, "feature_group_count", int)
    if rows is not None and (window > 1 or groups == 1):
        axes.append(rows)
    if groups == 1:
        rhs[attr_of(a, "kernel_output_feature_dim", int)] = feature
        axes.append(feature)
    extras = ([tuple(d) for d in parse_program(str(a["program"])).operand_dims[1:]]
              if opdef is ops.fused_convolution else [])
    return [tuple(lhs), tuple(rhs), *extras], axes


def _rows_axis(attrs: Mapping[str, AttrValue]) -> int | None:
    """The result dimension of a convolution's first spatial dimension when its slabs can
    be cut along it (no base dilation, no negative padding there), else None."""
    spatial = attr_ints(attrs, "output_spatial_dims")
    if not spatial or attr_ints(attrs, "lhs_dilation")[0] != 1 or min(
            attr_ints2(attrs, "padding")[0]) < 0:
        return None
    return spatial[0]


def _input_rows(lhs: np.ndarray, rhs: np.ndarray, attrs: Mapping[str, AttrValue], y0: int,
                y1: int) -> tuple[np.ndarray, Mapping[str, AttrValue]]:
    """The input rows output rows [y0, y1) of a convolution read (along its first spatial
    dimension), and its attributes with that dimension's padding for them: the rows of
    the padding the slab's windows reach, the others cut away."""
    d = attr_ints(attrs, "input_spatial_dims")[0]
    stride = attr_ints(attrs, "window_strides")[0]
    dilation = attr_ints(attrs, "rhs_dilation")[0]
    size = lhs.shape[d]
    (low, _), *rest = attr_ints2(attrs, "padding")
    span = (rhs.shape[attr_ints(attrs, "kernel_spatial_dims")[0]] - 1) * dilation + 1
    first = y0 * stride - low  # the padded input row of the slab's first window, unpadded
    last = (y1 - 1) * stride - low + span  # one past its last window's last row
    lo, hi = max(0, first), min(size, last)
    index = [slice(None)] * lhs.ndim
    index[d] = slice(lo, max(lo, hi))
    padding = ((lo - first, last - max(lo, hi)), *rest)
    return lhs[tuple(index)], {**attrs, "padding": padding}


def _slab(arg: np.ndarray, dims: Sequence[int], axis: int, lo: int, hi: int, size: int
          ) -> np.ndarray | None:
    """The part of operand `arg` (its dims along result dims `dims`) a slab [lo, hi) of
    result dimension `axis` reads: the operand whole when it does not run along `axis` (or
    is broadcast along it, size 1); None when its layout does not say (a mismatch)."""
    if arg.ndim != len(dims):
        return arg if arg.size == 1 else None
    if axis not in dims:
        return arg
    k = list(dims).index(axis)
    if arg.shape[k] == 1:
        return arg
    if arg.shape[k] != size:
        return None
    return arg[(slice(None),) * k + (slice(lo, hi),)]


def side_by_side(steps: Sequence[Step], names: Sequence[str]) -> None:
    """steps[0] on the calling thread, the others on pooled threads named `names[1:]`, with
    floating-point errors ignored on those; the first exception raised here once all have
    finished."""
    failures: list[BaseException] = []

    def on_worker(step: Step) -> Callable[[], None]:
        def task() -> None:
            token = float_errors.ignore()
            try:
                step()
            except BaseException as exc:  # noqa: BLE001 - raised on the calling thread
                failures.append(exc)
            finally:
                float_errors.restore(token)
        return task

    def first() -> None:
        steps[0]()

    run_on_threads([first, *(on_worker(s) for s in steps[1:])], names)
    if failures:
        raise failures[0]


def in_runs(count: int, threads: int, part: Callable[[int, int, int], None],
            name: str) -> None:
    """`part(t, lo, hi)` for each run t of consecutive indices [lo, hi) of range(count), as
    many runs as `threads` (at least one, at most `count`), of sizes as even as can be,
    side by side (`side_by_side`, threads named `name` and t), or on the calling thread
    when there is one run."""
    edges = np.linspace(0, count, max(1, min(threads, count)) + 1).astype(int)
    work = [functools.partial(part, t, int(lo), int(hi))
            for t, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True))]
    if len(work) == 1:
        work[0]()
    else:
        side_by_side(work, [f"{name}{t}" for t in range(len(work))])


def blas_instructions(instructions: Sequence[tuple]) -> list[int]:
    """Indices of the instructions (kernel, args, outs, attrs, opdef) that use the BLAS."""
    return [k for k, ins in enumerate(instructions) if ins[-1] in _BLAS_OPS]


def is_split(step: Step) -> bool:
    """Whether `step` runs slabs side by side (`split_step`)."""
    return getattr(step, "func", None) is side_by_side


def blas_work_split(sizes: Sequence[int], steps: Sequence[Step]) -> bool:
    """Whether every one of these BLAS instructions (`sizes`: the elements each reads and
    writes) bound to `steps` is split, or small (under 2 x MIN_SLAB elements: OpenBLAS
    runs it on one thread anyway): then the function may run with the BLAS at one thread."""
    return all(is_split(step) or size < 2 * MIN_SLAB
               for size, step in zip(sizes, steps, strict=True))
