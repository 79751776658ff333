"""The kernel of `fused_elementwise`: a chain of elementwise steps, block by block in place.

`prepare_fused(args, out, attrs)` plans the whole evaluation once for fixed arrays: the
result is cut into blocks of about `BLOCK` elements along its leading dimensions; each step
writes into a block-sized scratch buffer (buffers are reused once a step's value is dead, so
a chain needs a few of them, whatever its length) and the last step writes straight into the
result's block. It returns one zero-argument callable that runs the planned numpy calls: the
executor binds it at load (`backend/runtime/bound_steps.py`), the kernel plans per call.

Each step is exactly the unfused op's computation on a block: the op's ufunc with `out=`
when the op's kernel is that ufunc for these dtypes (`from_defs.exact_ufunc`: add,
multiply... on float32/float64/int32/int64, float32 exp, tanh and log by numpy's float32
loop; compare on those dtypes), the other transcendental functions as the kernel calls
them, straight into the block in float64, a select of one dtype as the kernel's two copies
into the block, a
float-to-float convert as a cast into the block, float32 erf by `erf_float32` into the
block, otherwise the op's own kernel on the block (operands broadcast as views; an operand
of one value of a ufunc step as a 0-d view). Elementwise results do not depend on
blocking, so a fused chain gives bit for bit the results of its ops run one by one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.dtypes import DType
from nxcc.ir.fused_program import FusedProgram, Step, parse_program
from nxcc.ir.kernels.base import NO_CALLS, KernelContext, get_kernel, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, NATIVE_NUMBERS, bound_call, in_order
from nxcc.ir.kernels.elementwise import COMPARE_UFUNCS
from nxcc.ir.kernels.erf import erf_float32, prepare_erf_float32
from nxcc.ir.kernels.from_defs import exact_ufunc
from nxcc.ir.kernels.plan import plan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import ElementwiseDef

#: elements per block. Each step of a block is one numpy call, which releases the GIL only
#: while it loops: when a program is split between threads (`parallel_steps`), calls of a
#: few microseconds make the threads wait on each other. BERT-base's GELU (an erf among 6
#: steps, 393,216 elements, two threads) took 1.4 ms in blocks of 65,536 and 1.8-2.2 ms in
#: blocks of 32,768; a GPT training step (4 layers, hidden 512, sequence 256) ran at the
#: same speed with either, within 5% noise; 16,384 was 8% slower on one thread.
BLOCK = 65536

_F32 = np.dtype(np.float32)


def operand_view(arg: np.ndarray, dims: Sequence[int], rank: int) -> np.ndarray:
    """`arg` viewed at the result's rank: its dimensions at `dims`, size 1 elsewhere."""
    shape = [1] * rank
    for size, d in zip(arg.shape, dims, strict=True):
        shape[d] = size
    return np.asarray(arg).reshape(shape)


def blocks(shape: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """Index tuples cutting `shape` into blocks of at most about BLOCK elements: whole
    trailing dimensions, a range of one dimension, single indices of the leading ones."""
    size = math.prod(shape)
    if size <= BLOCK:
        yield tuple(slice(None) for _ in shape)
        return
    k = next(a for a in range(len(shape)) if math.prod(shape[a + 1:]) <= BLOCK)
    step = max(1, BLOCK // math.prod(shape[k + 1:]))
    tail = tuple(slice(None) for _ in shape[k + 1:])
    for lead in np.ndindex(*shape[:k]):
        head = tuple(slice(i, i + 1) for i in lead)
        for start in range(0, shape[k], step):
            yield head + (slice(start, min(start + step, shape[k])),) + tail


def _sub(view: np.ndarray, index: tuple[slice, ...]) -> np.ndarray:
    """The part of a broadcastable `view` that meets block `index` (size-1 dims whole)."""
    if not index:
        return view[...]  # a 0-d view (indexing by () would give a scalar)
    return view[tuple(slice(None) if view.shape[a] == 1 else s for a, s in enumerate(index))]


def _scratch_index(index: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """Where a block of `index` sits in a scratch buffer of the first block's shape."""
    return tuple(slice(0, len(range(*s.indices(n)))) for s, n in zip(index, shape, strict=True))


def _call(step: Step, ins: list[np.ndarray], out: np.ndarray) -> Callable[[], object]:
    """One step on one block: its ufunc with out= where that is its kernel, else its kernel."""
    same = all(x.dtype == ins[0].dtype for x in ins)
    opdef = step.opdef
    ufunc = exact_ufunc(opdef, out.dtype) if same and ins[0].dtype == out.dtype else None
    if ufunc is not None:
        if opdef not in (ops.maximum, ops.minimum):  # those: see _scalar_for_min_max
            ins = _scalars_zero_dim(ins)
        return bound_call(ufunc, *ins, out)
    if opdef is ops.compare and same and ins[0].dtype in NATIVE_NUMBERS:
        return bound_call(COMPARE_UFUNCS[step.qualifier], *_scalars_zero_dim(ins), out)
    if (opdef is ops.select and ins[0].dtype == np.bool_ and ins[0].ndim
            and ins[1].dtype == ins[2].dtype == out.dtype):
        # the kernel's two copies (the false values, then the true ones where the
        # predicate holds), without its per-call wrapping
        on_true, on_false = _scalars_zero_dim(ins[1:])
        return in_order([functools.partial(np.copyto, out, on_false),
                         functools.partial(np.copyto, out, on_true, where=ins[0])])
    if opdef is ops.erf and ins[0].dtype == out.dtype == _F32:
        planned = prepare_erf_float32(ins[0], out)  # a small block: its own buffers
        return planned or functools.partial(erf_float32, ins[0], out)  # the kernel's path
    if opdef is ops.convert and ins[0].dtype in NATIVE_FLOATS and out.dtype in NATIVE_FLOATS:
        return functools.partial(np.copyto, out, ins[0], casting="unsafe")  # as astype
    if _float64_ufunc(opdef) and ins[0].dtype == out.dtype in NATIVE_FLOATS:
        # what unary_kernel calls for these dtypes, without its per-call wrapping
        return functools.partial(opdef.fn, ins[0], out=out, dtype=np.float64,  # type: ignore[attr-defined]
                                 casting="unsafe")
    args = [np.broadcast_to(x, out.shape) for x in ins]
    attrs = step.attrs() if not isinstance(opdef, ElementwiseDef) else {}
    return functools.partial(get_kernel(opdef), args, [out], attrs, NO_CALLS)


def _scalars_zero_dim(ins: list[np.ndarray]) -> list[np.ndarray]:
    """`ins` with each operand that holds one value (every dimension of stride 0 or size 1)
    as a 0-d view of it. numpy runs a binary ufunc against a 0-d operand as against a
    scalar: 2.5x faster on a 128-element block than against the stride-0 view (whose
    broadcasting takes the general iterator), 1.2-1.4x on a 16,384-element one. Not for
    maximum and minimum: against a scalar they take a scalar loop, 4x slower than against
    an array of the value (`_scalar_for_min_max`)."""
    return [x[tuple(slice(0, 1) for _ in x.shape)].reshape(())
            if x.ndim and x.size and all(st == 0 or n == 1
                                         for st, n in zip(x.strides, x.shape, strict=True))
            else x for x in ins]


def _float64_ufunc(opdef: object) -> bool:
    """A unary op whose kernel evaluates floats by its numpy ufunc in float64 (`precise`)."""
    return (isinstance(opdef, ElementwiseDef) and opdef.precise and opdef.operands == 1
            and isinstance(opdef.fn, np.ufunc))


def _registers(program: FusedProgram) -> list[int]:
    """A scratch register per step but the last (-1), reused once a value is dead."""
    last = program.last_uses()
    n = len(program.steps)
    reg = [-1] * n
    free: list[int] = []
    count = 0
    for j, s in enumerate(program.steps):
        if j < n - 1:
            if free:
                reg[j] = free.pop()
            else:
                reg[j], count = count, count + 1
        for is_op, i in set(s.args):
            if not is_op and last[i] == j and reg[i] >= 0:
                free.append(reg[i])
    return reg


def prepare_fused(args: Sequence[np.ndarray], out: np.ndarray,
                  attrs: Mapping[str, AttrValue],
                  constant: Sequence[bool] | None = None) -> Callable[[], None]:
    """A callable that computes `out` from `args` (fixed arrays) by the op's program.
    `constant[i]`: args[i]'s values never change (None: the plan is used once, so none
    change while it is used). An operand of the result's shape and layout may be `out`
    itself (an epilogue in place): each block reads its part of it before the last step
    writes that part."""
    program = parse_program(str(attrs["program"]))
    views = [operand_view(a, d, out.ndim) for a, d in zip(args, program.operand_dims,
                                                          strict=True)]
    fixed = [True] * len(args) if constant is None else list(constant)
    return _prepare_views(program, views, out, fixed)


def prepare_epilogue(first: np.ndarray, region: tuple[slice, ...], *,
                     args: Sequence[np.ndarray], out: np.ndarray,
                     attrs: Mapping[str, AttrValue], constant: Sequence[bool],
                     buffers: dict | None = None, wide: np.ndarray | None = None
                     ) -> Callable[[], None]:
    """A callable computing out[region] by the program of `attrs` with operand a0 read
    from `first` (shaped as out[region]: a product's tile) and a1, a2... from the parts of
    `args` that meet the region (`constant` as for `prepare_fused`, of `args`). `buffers`:
    the block-sized arrays it needs, shared with the other regions' callables of the same
    dict (which must run one at a time: a convolution's tiles).

    `wide`, when given, is a C-contiguous array whose leading part along each dimension is
    `first` (a row-route convolution's product with its wrap-around columns, `conv_rows`),
    which the callable may overwrite: when no operand but a0 varies along a dimension where
    the two differ, the program runs on `wide` in place, in long contiguous runs, and its
    leading part is then copied to out[region] (a ufunc on `first`'s short rows pays for
    every row: 108 against 51 us for ReLU on SqueezeNet's 64 x 55 x 55)."""
    program = parse_program(str(attrs["program"]))
    views = [first, *(_sub(operand_view(a, d, out.ndim), region)
                      for a, d in zip(args, program.operand_dims[1:], strict=True))]
    if wide is not None and all(v.shape[d] == 1 for v in views[1:]
                                for d in range(wide.ndim) if wide.shape[d] != first.shape[d]):
        in_place = _prepare_views(program, [wide, *views[1:]], wide, [False, *constant],
                                  buffers)
        return in_order([in_place, functools.partial(np.copyto, out[region], first)])
    return _prepare_views(program, views, out[region], [False, *constant], buffers)


def _prepare_views(program: FusedProgram, views: list[np.ndarray], out: np.ndarray,
                   fixed: list[bool], buffers: dict | None = None) -> Callable[[], None]:
    """`prepare_fused` on operands already viewed at the result's rank; its block-sized
    arrays taken from (and added to) `buffers` when given."""
    shared: dict = {} if buffers is None else buffers
    if out.size == 0:
        return lambda: None
    dtypes = program.step_dtypes([DType.from_numpy(a.dtype) for a in views])
    reg = _registers(program)
    index_list = list(blocks(out.shape))
    first = _sub(out, index_list[0]).shape
    filled = {}
    for i, v in enumerate(views):
        if fixed[i] and _scalar_for_min_max(program, i, v):
            full = ("filled", i, first)
            if full not in shared:
                shared[full] = np.full(first, v.flat[0], v.dtype)
            filled[i] = shared[full]
    # one scratch buffer per register and dtype it is used with
    scratch: dict[tuple[int, DType], np.ndarray] = {}
    for j, r in enumerate(reg):
        if r >= 0 and (r, dtypes[j]) not in scratch:
            key = ("scratch", r, dtypes[j], first)
            if key not in shared:
                shared[key] = np.empty(first, dtypes[j].numpy)
            scratch[(r, dtypes[j])] = shared[key]
    calls: list[Callable[[], object]] = []
    for index in index_list:
        where = _scratch_index(index, out.shape)
        values: list[np.ndarray] = []
        for j, s in enumerate(program.steps):
            target = _sub(out, index) if reg[j] < 0 else _sub(scratch[(reg[j], dtypes[j])],
                                                               where)
            ins = [values[i] if not is_op else _sub(filled[i], where) if i in filled
                   else _sub(views[i], index) for is_op, i in s.args]
            calls.append(_call(s, ins, target))
            values.append(target)

    return in_order(calls)


def _scalar_for_min_max(program: FusedProgram, i: int, view: np.ndarray) -> bool:
    """Operand i holds one value (every stride 0 or size 1) and a maximum or minimum step
    reads it: such an operand is read from a block-sized array of that value instead
    (numpy's maximum and minimum against a broadcast scalar take a scalar loop, 4x slower
    than against an array: ReLU's maximum(x, 0) after every convolution)."""
    if view.size == 0 or any(st != 0 and n != 1 for st, n in zip(view.strides, view.shape,
                                                                 strict=True)):
        return False
    return any(s.opdef in (ops.maximum, ops.minimum) and (True, i) in s.args
               for s in program.steps)


@kernel(ops.fused_elementwise)
def fused_elementwise(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                      attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = the program's last step, evaluated block by block."""
    with np.errstate(all="ignore"):
        prepare_fused(args, outs[0], attrs)()


@plan(ops.fused_elementwise, strided_out=True)
def fused_elementwise_plan(args: Sequence[np.ndarray], out: np.ndarray,
                           attrs: Mapping[str, AttrValue], ctx: KernelContext,
                           constant: Sequence[bool], pool: ScratchPool
                           ) -> Callable[[], None] | None:
    """Its block-by-block plan, made once (`prepare_fused`)."""
    return prepare_fused(args, out, attrs, constant)
