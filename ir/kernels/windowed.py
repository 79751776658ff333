"""Windowed kernels: reduce_window and select_and_scatter.

reduce_window pads each input with its init value when there is padding (base dilation
inserts init values between elements, negative padding crops), views the strided, dilated
windows without copying, and folds the window axes like reduce (init folded in once per
window). Maximum and minimum (max and min pools) are folded one window dimension at a time
(each step a ufunc call per offset along that dimension on strided slices); another ufunc
computation with a window of at most 64 elements takes one ufunc call per window offset
(in the order of the offsets: a sum's rounding depends on it). Both accumulate in the out
itself when it has the compute dtype.
Planned once at load (`prepare_reduce_window`), a max or min pool pads nothing: each
window offset folds into the outputs whose input under it lies inside the array, a large
one in blocks of channels whose intermediate stays in cache (`POOL_BLOCK_BYTES`); a sum
pool without padding makes the kernel's ufunc calls on views made once.

select_and_scatter (the max-pool gradient): for each window of the padded operand, the
`select` computation picks one element, scanning the window in row-major order and keeping
the current choice `c` against a candidate `e` while select(c, e) holds (padding is never
picked; a window entirely in padding picks nothing). The source value of the window is then
combined into the out (initialised with init) at the picked position with `scatter`. The scan
is one step per window offset on all windows at once; when select is a single compare of its
parameters (found by probing, exactly) the step uses the numpy comparison, otherwise it calls
the select computation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Symbol
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.combine import combine_at
from nxcc.ir.kernels.common import (
    NATIVE_NUMBERS,
    as_compute,
    bound_call,
    in_order,
    pad_array,
    store,
    windows,
)
from nxcc.ir.kernels.elementwise import COMPARE_UFUNCS
from nxcc.ir.kernels.gather import element_strides
from nxcc.ir.kernels.plan import kernel_only, plan
from nxcc.ir.kernels.reducer import call, fast_ufunc, fn_name, fold, prepare
from nxcc.ir.kernels.scratch_pool import ScratchPool

_OFFSET_LOOP_MAX = 64  # windows up to this many elements are folded offset by offset
_EXACT_FOLDS = (np.maximum, np.minimum)  # folded one window dimension at a time

_PROBE_PATTERNS: dict[tuple[bool, ...], str] = {
    (True, False, False): "EQ",
    (False, True, True): "NE",
    (True, False, True): "GE",
    (False, False, True): "GT",
    (True, True, False): "LE",
    (False, True, False): "LT",
}


@kernel(ops.reduce_window)
def reduce_window(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                  attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """reduce_window(inputs..., inits...): each out element folds one window."""
    a: Mapping = attrs
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    rank = inputs[0].ndim
    low = [lo for lo, _ in a["padding"]]
    high = [hi for _, hi in a["padding"]]
    interior = [d - 1 for d in a["base_dilations"]]
    if any(low) or any(high) or any(interior):
        inputs = [pad_array(x, i, low, high, interior) for x, i in zip(inputs, inits, strict=True)]
    ufunc, values = prepare(ctx, a["computation"], inputs, inits)
    views = [windows(v, a["window_dimensions"], a["window_strides"], a["window_dilations"])
             for v in values]
    if ufunc is not None and 0 < math.prod(a["window_dimensions"]) and views[0].size and (
            ufunc in _EXACT_FOLDS or math.prod(a["window_dimensions"]) <= _OFFSET_LOOP_MAX):
        out = outs[0]
        direct = out.dtype == views[0].dtype and out.flags.c_contiguous
        acc = out if direct else np.empty(views[0].shape[:rank], dtype=views[0].dtype)
        with np.errstate(all="ignore"):
            if ufunc in _EXACT_FOLDS:
                _fold_by_dimensions(ufunc, values[0], inits[0], a["window_dimensions"],
                                    a["window_strides"], a["window_dilations"], acc)
            else:
                _fold_by_offsets(ufunc, views[0], inits[0], rank, acc)
        if not direct:
            store(out, acc)
        return
    results = fold(ctx, a["computation"], ufunc, views, range(rank, 2 * rank), inits)
    for out, r in zip(outs, results, strict=True):
        store(out, r)


def _fold_by_dimensions(ufunc: np.ufunc, x: np.ndarray, init: np.ndarray,
                        window: Sequence[int], strides: Sequence[int],
                        dilations: Sequence[int], acc: np.ndarray) -> None:
    """acc = the fold by `ufunc` (maximum or minimum) of each window of `x`, from `init`:
    the steps of `_dimension_fold`, then `init` folded in unless it is the identity."""
    in_order(_dimension_fold(ufunc, x, window, strides, dilations, acc))()
    if not _is_identity(ufunc, init, acc.dtype):
        ufunc(as_compute(np.asarray(init)), acc, out=acc)


def _dimension_fold(ufunc: np.ufunc, x: np.ndarray, window: Sequence[int],
                    strides: Sequence[int], dilations: Sequence[int],
                    acc: np.ndarray, low: Sequence[int] | None = None,
                    init: np.ndarray | None = None,
                    buffers: dict | None = None) -> list[Callable[[], object]]:
    """The ufunc calls that fold each window of `x` into `acc` without init, one window
    dimension at a time: the strided slices of the size-1 window dimensions first (views),
    then along each other dimension d, part = ufunc over the window offsets k of part's
    slices k * dilation + stride * (0 .. count - 1), into a new array (the last one into
    `acc`). Max and min are exact, so this gives the values of folding every window offset
    in turn (a window holding both +0.0 and -0.0 may keep the other zero), with every slice
    contiguous along the trailing dimensions: a 3x3 / 2 max pool on f32[1,64,111,111] takes
    0.33 ms instead of 0.66, a 2x2 / 2 one on f32[1,64,224,224] 1.8 instead of 3.0.

    With edge padding `low` (x as if padded with `init` by `low` before and enough after
    along each dimension; negative crops), nothing is padded: along a padded dimension,
    offset k folds only into the outputs whose input under k lies inside x (one strided
    slice each), starting from the slices of the offsets under which every output's input
    lies inside x, or, when there is none, from `init` (read when the step runs): the
    values of folding the padded array, padding elements being `init`.

    `buffers`, when given, holds the intermediate arrays (one per folded dimension but the
    last, made at the first call's shapes) for calls that run one after another: the
    blocks of `prepare_reduce_window`, the later ones no larger along any dimension."""
    low = list(low) if low is not None else [0] * x.ndim
    part = x
    reduced = []
    for d, (w, s, count) in enumerate(zip(window, strides, acc.shape, strict=True)):
        if w == 1 and not low[d] and (count - 1) * s < part.shape[d]:  # no padding read
            if part.shape[d] != count:
                part = _slice_along(part, d, 0, s, count)
        else:
            reduced.append(d)
    if not reduced:
        return [functools.partial(np.copyto, acc, part)]
    steps: list[Callable[[], object]] = []
    for d in reduced:
        count = acc.shape[d]
        shape = part.shape[:d] + (count,) + part.shape[d + 1:]
        if d == reduced[-1]:
            target = acc
        elif buffers is None:
            target = np.empty(shape, part.dtype)
        else:
            whole = buffers.setdefault(d, np.empty(shape, part.dtype))
            target = whole[tuple(slice(0, n) for n in shape)]
        spans = _inside(part.shape[d], count, window[d], strides[d], dilations[d], low[d])
        whole = [(first, n) for first, n, start in spans if start == 0 and n == count]
        partial = [(first, n, start) for first, n, start in spans
                   if n and not (start == 0 and n == count)]
        slices = [_slice_along(part, d, first, strides[d], n) for first, n in whole]
        if len(slices) >= 2:
            steps.append(bound_call(ufunc, slices[0], slices[1], target))
        elif slices:
            steps.append(functools.partial(np.copyto, target, slices[0]))
        else:
            assert init is not None, "an offset outside x needs the padding value"
            steps.append(functools.partial(np.copyto, target, init))
        steps += [bound_call(ufunc, target, later, target) for later in slices[2:]]
        for first, n, start in partial:
            into = _slice_along(target, d, start, 1, n)
            steps.append(bound_call(ufunc, into, _slice_along(part, d, first, strides[d], n),
                                    into))
        part = target
    return steps


def _inside(size: int, count: int, w: int, s: int, dl: int, lo: int
            ) -> list[tuple[int, int, int]]:
    """For each window offset k along a dimension of `size` elements padded by `lo` before:
    (x's index under output `start`, how many outputs from `start` on read x, `start`)."""
    spans = []
    for k in range(w):
        shift = k * dl - lo  # x's index under output i is i * s + shift
        start = max(0, -(shift // s))
        stop = min(count, (size - 1 - shift) // s + 1) if size - 1 >= shift else 0
        n = max(0, stop - start)
        spans.append((start * s + shift, n, start))
    return spans


def _slice_along(x: np.ndarray, d: int, start: int, step: int, count: int) -> np.ndarray:
    """x's elements start, start + step, ... (count of them) along dimension d (a view)."""
    index = [slice(None)] * x.ndim
    index[d] = slice(start, start + step * (count - 1) + 1, step)
    return x[tuple(index)]


def _is_identity(ufunc: np.ufunc, init: np.ndarray, dtype: np.dtype) -> bool:
    """`init` is one value that folding with changes nothing for maximum / minimum on
    `dtype` (-inf / +inf, the integer bounds)."""
    value = as_compute(np.asarray(init))
    if value.shape != ():
        return False
    if dtype.kind == "f":
        return bool(value == (-np.inf if ufunc is np.maximum else np.inf))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return bool(value == (info.min if ufunc is np.maximum else info.max))
    return False


def prepare_reduce_window(args: Sequence[np.ndarray], out: np.ndarray,
                          attrs: Mapping[str, AttrValue], ctx: KernelContext,
                          constant: Sequence[bool]) -> Callable[[], None] | None:
    """reduce_window's fold planned once for these fixed arrays (its slices and
    intermediate arrays made now, the last step writing into `out`; the same values as the
    kernel), or None unless: one input of out's native dtype (float32/float64/int32/int64)
    with its init, a computation numpy has as a ufunc, no base dilation, a window that fits
    the padded input, `out` C-contiguous. A maximum or minimum (a max pool) pads nothing:
    the fold skips the offsets that fall in the padding (`_dimension_fold`), and with
    `constant[1]` (the init never changes) an identity init is skipped for good. Another
    ufunc (a sum pool) without padding and with a window of at most `_OFFSET_LOOP_MAX`
    elements folds the init, then each window offset in turn, as the kernel does
    (`_offset_steps`)."""
    a: Mapping = attrs
    if len(args) != 2 or out.size == 0 or not out.flags.c_contiguous:
        return None
    x, init = args
    if x.dtype != out.dtype or init.dtype != out.dtype or out.dtype not in NATIVE_NUMBERS:
        return None
    if any(b != 1 for b in a["base_dilations"]):
        return None
    ufunc = fast_ufunc(ctx, a["computation"], [init.dtype])
    if ufunc is None or 0 in a["window_dimensions"]:
        return None
    low = [lo for lo, _ in a["padding"]]
    counts = tuple((n + lo + hi - (w - 1) * dl - 1) // s + 1 for n, (lo, hi), w, s, dl in zip(
        x.shape, a["padding"], a["window_dimensions"], a["window_strides"],
        a["window_dilations"], strict=True))
    if counts != out.shape or min(counts) < 1:
        return None
    if ufunc not in _EXACT_FOLDS:
        if any(lo or hi for lo, hi in a["padding"]) or math.prod(
                a["window_dimensions"]) > _OFFSET_LOOP_MAX:
            return None
        view = windows(x, a["window_dimensions"], a["window_strides"], a["window_dilations"])
        return in_order(_offset_steps(ufunc, view, init, out))
    steps = []
    buffers: dict = {}  # the blocks run one after another: one set of intermediates
    for index in _pool_blocks(x, a["window_dimensions"], a["window_strides"], a["padding"]):
        steps += _dimension_fold(ufunc, x[index], a["window_dimensions"],
                                 a["window_strides"], a["window_dilations"], out[index], low,
                                 init, buffers)
    if not (constant[1] and _is_identity(ufunc, init, out.dtype)):
        steps.append(bound_call(ufunc, init, out, out))
    return in_order(steps)


#: input bytes of a block of a planned max or min pool (`_pool_blocks`): its intermediate
#: stays in a core's L2 cache between the fold of one window dimension and the next. A
#: 3x3 / 2 max pool on f32[1,64,111,111] after SqueezeNet's first convolution took 0.68
#: ms in blocks of 16 channels, 0.84 ms whole and 0.90 ms in blocks of 4 (1 thread,
#: within the model)
POOL_BLOCK_BYTES = 1 << 20


def _pool_blocks(x: np.ndarray, window: Sequence[int], strides: Sequence[int],
                 padding: Sequence[Sequence[int]]) -> list[tuple[slice, ...]]:
    """Index tuples cutting a pool's input (and its out alike) into blocks of about
    POOL_BLOCK_BYTES along its last leading dimension that it does not pool (window 1,
    stride 1, no padding: the channels of an (N, C, H, W) pool), one block per index of
    the dimensions before that one; the whole array when there is no such dimension or
    it already fits."""
    lead = 0
    while lead < x.ndim and window[lead] == 1 and strides[lead] == 1 and not any(
            padding[lead]):
        lead += 1
    if lead == 0 or x.nbytes <= POOL_BLOCK_BYTES or lead == x.ndim:
        return [tuple(slice(None) for _ in x.shape)]
    d = lead - 1
    unit = math.prod(x.shape[d + 1:]) * x.itemsize  # bytes of one index along d
    parts = min(x.shape[d], -(-x.shape[d] * unit // POOL_BLOCK_BYTES))
    size, larger = divmod(x.shape[d], parts)  # the larger blocks first (`_dimension_fold`)
    edges = np.cumsum([0] + [size + 1] * larger + [size] * (parts - larger))
    return [(*(slice(i, i + 1) for i in head), slice(int(lo), int(hi)))
            for head in np.ndindex(*x.shape[:d])
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


@plan(ops.reduce_window)
def reduce_window_plan(args: Sequence[np.ndarray], out: np.ndarray,
                       attrs: Mapping[str, AttrValue], ctx: KernelContext,
                       constant: Sequence[bool], pool: ScratchPool
                       ) -> Callable[[], None] | None:
    """By a numpy ufunc (max, min and sum pools): the fold planned once
    (`prepare_reduce_window`)."""
    return prepare_reduce_window(args, out, attrs, ctx, constant)


def _offset_steps(ufunc: np.ufunc, view: np.ndarray, init: np.ndarray, out: np.ndarray
                  ) -> list[Callable[[], object]]:
    """The calls of `_fold_by_offsets` into `out` (of the compute dtype), the init folded
    with the first offset's slice: ufunc(init, first) is the kernel's store of the init
    and its first ufunc call."""
    rank = out.ndim
    offsets = [view[(Ellipsis, *offset)] for offset in np.ndindex(*view.shape[rank:])]
    return [bound_call(ufunc, init, offsets[0], out),
            *(bound_call(ufunc, out, later, out) for later in offsets[1:])]


def _fold_by_offsets(ufunc: np.ufunc, view: np.ndarray, init: np.ndarray, rank: int,
                     acc: np.ndarray) -> None:
    """acc = the ufunc-fold of the window axes of `view` (positions..., window...) from
    `init`, one window offset at a time (each a whole-array ufunc call, cache friendly)."""
    store(acc, as_compute(np.asarray(init)))
    with np.errstate(all="ignore"):
        for offset in np.ndindex(*view.shape[rank:]):
            ufunc(acc, view[(Ellipsis, *offset)], out=acc)


def compare_direction(ctx: KernelContext, computation: Symbol | str,
                      dtype: np.dtype) -> str | None:
    """The comparison a two-parameter select computation performs, when it is one compare
    of its parameters (found exactly by probing three pairs); None otherwise."""
    if dtype == np.bool_ or ctx.binary_op(fn_name(computation)) is not ops.compare:
        return None
    lhs = np.array([1, 1, 2]).astype(dtype)
    rhs = np.array([1, 2, 1]).astype(dtype)
    got = call(ctx, computation, [lhs, rhs])[0]
    return _PROBE_PATTERNS.get(tuple(bool(v) for v in np.broadcast_to(got, (3,))))


def _pick(values: np.ndarray, valid: np.ndarray, rank: int,
          keep: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Row-major flat index, within each window, of the element the select scan keeps.

    `values`/`valid` are (positions..., window...) views; `keep(current, candidate)` is the
    select computation on whole arrays. One pass per window offset, no window copies."""
    shape = values.shape[:rank]
    offsets = list(np.ndindex(*values.shape[rank:]))
    first = (Ellipsis, *offsets[0])
    current = values[first].copy()
    chosen = np.zeros(shape, dtype=np.intp)
    have = valid[first].copy()
    for k, offset in enumerate(offsets[1:], start=1):
        candidate = values[(Ellipsis, *offset)]
        ok = valid[(Ellipsis, *offset)]
        kept = np.broadcast_to(np.asarray(keep(current, candidate), dtype=bool), shape)
        take = ok & (~have | ~kept)
        np.copyto(current, candidate, where=take)
        np.copyto(chosen, k, where=take)
        have |= ok
    return chosen


@kernel(ops.select_and_scatter)
def select_and_scatter(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                       attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """select_and_scatter(operand, source, init): see the module doc."""
    a: Mapping = attrs
    operand, source, init = args
    out = outs[0]
    rank = operand.ndim
    window, strides = tuple(a["window_dimensions"]), tuple(a["window_strides"])
    low = [lo for lo, _ in a["padding"]]
    high = [hi for _, hi in a["padding"]]
    zeros, ones = [0] * rank, [1] * rank
    padded = pad_array(operand, operand.reshape(-1)[0] if operand.size else 0, low, high, zeros)
    mask = pad_array(np.ones(operand.shape, bool), False, low, high, zeros)
    values = windows(padded, window, strides, ones)
    valid = windows(mask, window, strides, ones)

    result = np.empty(operand.shape, dtype=out.dtype)
    store(result, init)
    if values.size:
        direction = compare_direction(ctx, a["select"], operand.dtype)
        if direction is not None:
            ufunc = COMPARE_UFUNCS[direction]
            pick = _pick(values, valid, rank, lambda c, e: ufunc(as_compute(c), as_compute(e)))
        else:
            pick = _pick(values, valid, rank, lambda c, e: call(ctx, a["select"], [c, e])[0])
        positions = values.shape[:rank]
        offset = np.unravel_index(pick, window)
        grid = np.indices(positions, sparse=True)
        picked_valid = valid[(*grid, *offset)]
        flat = np.zeros(positions, dtype=np.int64)
        for d, step in enumerate(element_strides(operand.shape)):
            flat += (grid[d] * strides[d] + offset[d] - low[d]) * step
        flat = flat[picked_valid]
        src = np.asarray(source)[picked_valid]
        target = result.reshape(-1)
        combine_at(ctx, a["scatter"], [target], flat, [src.astype(out.dtype)])
    np.copyto(out, result)


kernel_only(ops.select_and_scatter)
