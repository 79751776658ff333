"""Instructions bound to their arrays at load: one zero-argument callable per instruction.

When every value of a function lives at a fixed place (the planned arena views, the
weights, the splats and the function's parameter buffers), each instruction can be turned
once into a callable that only does the work: `bind_step` returns
`functools.partial(kernel, args, outs, attrs, ctx)`, or, for the ops whose kernel is one
numpy call on arrays of one native dtype, that numpy call itself with every view it needs
made in advance:

- add, subtract, multiply, maximum, minimum (float32/float64/int32/int64), divide (floats),
  negate and abs (floats), compare (floats): the ufunc with `out=`, exactly what the kernel
  calls for those dtypes (the executor ignores floating-point errors once per execution, as
  every kernel does per op);
- fused_elementwise: its block-by-block plan, made once (`ir/kernels/fused.prepare_fused`);
- convolution on the row route: its kernel matrices made once, its padded image and tile
  buffers in the function's shared scratch (`ir/kernels/convolution.prepare_convolution`);
- softmax and layer norm over the last axis of contiguous floats: their kernels' steps
  block by block of rows, planned once (`ir/kernels/normalize.prepare_softmax`,
  `prepare_layer_norm`);
- reduce_window by maximum or minimum without padding (max and min pools): its kernel's
  fold one window dimension at a time, slices and intermediates made once
  (`ir/kernels/windowed.prepare_reduce_window`);
- reshape, transpose, broadcast_in_dim, copy: `np.copyto(out, view)` with the view made once;
- dot_general into a contiguous out of the accumulation dtype: `np.matmul(a, b, out=out3)`
  with its 3-D operands made once when they are views of their slot or constants (a
  transposed weight is packed once, at load).

A splat constant (a broadcast scalar, every stride 0) read by dot_general or convolution is
made an ordinary array once, at load: BLAS cannot read it, so numpy would multiply it in
its own loop (or the convolution kernel copy it) on every execution.

Every other op, and any case outside those conditions, calls its kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import Kernel, KernelContext
from nxcc.ir.kernels.common import NATIVE_FLOATS, NATIVE_NUMBERS
from nxcc.ir.kernels.convolution import prepare_convolution
from nxcc.ir.kernels.elementwise import COMPARE_UFUNCS
from nxcc.ir.kernels.fused import prepare_fused
from nxcc.ir.kernels.linalg import matmul_operands
from nxcc.ir.kernels.normalize import prepare_layer_norm, prepare_softmax
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.kernels.windowed import prepare_reduce_window

Step = Callable[[], object]

# opcode -> (ufunc, dtypes for which the kernel is exactly this ufunc)
_BINARY: dict[str, tuple[np.ufunc, frozenset[np.dtype]]] = {
    "add": (np.add, NATIVE_NUMBERS),
    "subtract": (np.subtract, NATIVE_NUMBERS),
    "multiply": (np.multiply, NATIVE_NUMBERS),
    "maximum": (np.maximum, NATIVE_NUMBERS),
    "minimum": (np.minimum, NATIVE_NUMBERS),
    "divide": (np.divide, NATIVE_FLOATS),
}
# ops whose constant operands are made dense at load (`_dense`)
_BLAS_OPS = frozenset({"dot_general", "convolution"})
_UNARY: dict[str, tuple[np.ufunc, frozenset[np.dtype]]] = {
    "negate": (np.negative, NATIVE_FLOATS),
    "abs": (np.absolute, NATIVE_FLOATS),
}


def bind_step(opcode: str, kern: Kernel, args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
              attrs: Mapping[str, AttrValue], ctx: KernelContext,
              constant: Sequence[bool], pool: ScratchPool | None = None) -> Step:
    """The instruction as a callable on these fixed arrays. `constant[i]`: args[i] never
    changes (a weight or splat), so what is derived from it may be computed now. `pool`:
    scratch shared with the other steps of the function (they run one at a time)."""
    if opcode in _BLAS_OPS:
        args = [_dense(a) if fixed else a for a, fixed in zip(args, constant, strict=True)]
    fast = _fast_step(opcode, args, outs, attrs, ctx, constant, pool or ScratchPool())
    if fast is not None:
        return fast
    return functools.partial(kern, list(args), list(outs), attrs, ctx)


def _dense(x: np.ndarray) -> np.ndarray:
    """A broadcast constant (a splat: every stride 0) made an ordinary array, once. BLAS
    cannot read a zero-stride matrix: numpy's matmul falls back to its own loop (5x slower
    on VGG-19's first classifier layer) and a convolution copied its weight on every call."""
    if x.size > 1 and 0 in x.strides:
        return np.ascontiguousarray(x)
    return x


def _fast_step(opcode: str, args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
               attrs: Mapping[str, AttrValue], ctx: KernelContext, constant: Sequence[bool],
               pool: ScratchPool) -> Step | None:
    if len(outs) != 1:
        return None
    out = outs[0]
    if opcode in _BINARY or opcode in _UNARY:
        ufunc, dtypes = _BINARY.get(opcode) or _UNARY[opcode]
        if out.dtype in dtypes and _same(args, out.dtype, out.shape):
            return functools.partial(ufunc, *args, out=out)
        return None
    if opcode == "compare":
        same = _same(args, args[0].dtype, out.shape) and args[0].dtype in NATIVE_FLOATS
        if same and out.dtype == np.bool_:
            return functools.partial(COMPARE_UFUNCS[str(attrs["direction"])], *args, out=out)
        return None
    if opcode == "dot_general":
        return _matmul_step(args, out, attrs, constant)
    if opcode == "convolution":
        return prepare_convolution(args, out, attrs, constant, pool)
    if opcode == "fused_elementwise":
        return prepare_fused(args, out, attrs, constant)
    if opcode == "reduce_window":
        return prepare_reduce_window(args, out, attrs, ctx, constant)
    if opcode == "softmax":
        return prepare_softmax(args[0], out, int(attrs["dimension"]))  # type: ignore[call-overload]
    if opcode == "layer_norm":
        return prepare_layer_norm(args[0], out, int(attrs["dimension"]),  # type: ignore[call-overload]
                                  float(attrs["epsilon"]), pool)  # type: ignore[arg-type]
    view = _moved_view(opcode, args, out, attrs)
    if view is None:
        return None
    return functools.partial(np.copyto, out, view)


def _same(args: Sequence[np.ndarray], dtype: np.dtype, shape: tuple[int, ...]) -> bool:
    return all(a.dtype == dtype and a.shape == shape for a in args)


def _moved_view(opcode: str, args: Sequence[np.ndarray], out: np.ndarray,
                attrs: Mapping[str, AttrValue]) -> np.ndarray | None:
    """The view of args[0] that a data-movement op copies into `out` (as its kernel does)."""
    if not args or args[0].dtype != out.dtype:
        return None
    x = args[0]
    if opcode == "reshape":
        view = x.reshape(out.shape)
    elif opcode == "transpose":
        view = x.transpose(attrs["permutation"])  # type: ignore[arg-type]
    elif opcode == "broadcast_in_dim":
        shape = [1] * out.ndim
        for i, d in enumerate(attrs["broadcast_dimensions"]):  # type: ignore[arg-type]
            shape[d] = x.shape[i]
        view = x.reshape(shape)
    elif opcode == "copy":
        view = x
    else:
        return None
    # a view of x's memory follows x; a copy (reshape of a non-contiguous x) would not
    return view if np.may_share_memory(view, x) or view.size == 0 else None


def _matmul_step(args: Sequence[np.ndarray], out: np.ndarray,
                 attrs: Mapping[str, AttrValue], constant: Sequence[bool]) -> Step | None:
    lhs, rhs = args
    a, b, acc = matmul_operands(lhs, rhs, out.dtype, attrs)
    if out.dtype != acc or not out.flags.c_contiguous:
        return None
    for derived, source, fixed in ((a, lhs, constant[0]), (b, rhs, constant[1])):
        if not fixed and not (derived.size == 0 or np.may_share_memory(derived, source)):
            return None  # a copy made now would not follow later values of the slot
    out3 = out.reshape(a.shape[0], a.shape[1], b.shape[2])
    if a.shape[0] == 1 and acc in NATIVE_FLOATS and _blas_layout(a[0]) and _blas_layout(b[0]):
        # one matrix product: np.dot calls the same BLAS gemm as np.matmul (the same bits
        # on 3,024 shapes and layouts, both OpenBLAS kernels) with less of numpy's
        # dispatch: 0.50 against 0.81 us for examples/mlp.onnx's f32[4,16] x f32[16,32]
        return functools.partial(np.dot, a[0], b[0], out=out3[0])
    return functools.partial(np.matmul, a, b, out=out3)


def _blas_layout(m: np.ndarray) -> bool:
    """A matrix BLAS reads in place (C- or Fortran-contiguous): np.dot gives it to gemm
    as it is; another layout would take numpy's own loop."""
    return m.flags.c_contiguous or m.flags.f_contiguous
