"""A fused convolution's bias taken into its matrix product.

An epilogue that starts by adding to the convolution's result an operand constant along
everything but the output features (a bias: `a1[1]`, a splat, a scalar) costs a pass over
the result. On the routes that copy the input into a column matrix anyway (`conv_rows`'
ROWS, `conv_tiles`' im2col), the bias goes into the product instead: the kernel matrix
gains a last column holding the bias, the column matrix a last row of ones, and
[W | b] @ [X; 1] is W @ X with b added inside the BLAS sum. The rest of the program (ReLU,
a residual add) then runs on that product, or nothing does when the add was all of it.

The values change only by rounding: the BLAS adds b as one more term of each sum. With the
bias as the last term, OpenBLAS (as numpy ships it) accumulates it last, so the bits are
those of the unfused add; a slab of a split instruction (`parallel_steps`) multiplies the
same rows and columns of the same matrices, so it keeps the bits of the whole. Only sums of
at most `MAX_TERMS` terms take a bias: OpenBLAS cuts a longer sum into blocks, and for most
lengths its threaded driver cuts them at other places than its single-threaded one, so the
unsplit product (the BLAS on its threads) and the slabs (the BLAS on one thread each)
would round differently (on this machine's SkylakeX kernels, from 449 terms on, for every
length but those of the form 32 n and 32 n - 1, the lengths convolutions' weights mostly
have without the bias).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_of
from nxcc.ir.fused_program import after_first_step, format_program, parse_program, step_texts
from nxcc.ir.kernels.common import NATIVE_FLOATS
from nxcc.ir.kernels.fused import operand_view

#: terms of a sum, the bias's included, up to which it takes a bias: the smallest K
#: block of OpenBLAS's float32 products (SGEMM_DEFAULT_Q) on Intel cores since Sandy
#: Bridge (256; 384 on Haswell, 448 on SkylakeX) and AMD's since Zen (320), within which
#: every thread count sums a column in the same order
MAX_TERMS = 256


@dataclass(frozen=True)
class Bias:
    """A bias for the product: `values`, a (O,) view read when the kernel matrix is made
    (and again on every call unless `fixed`)."""

    values: np.ndarray
    fixed: bool


def fold_bias(extras: Sequence[np.ndarray], constant: Sequence[bool], out: np.ndarray,
              attrs: Mapping[str, AttrValue]) -> tuple[Bias, str | None] | None:
    """(the bias, the program left once it is in the product; None: nothing is left) when
    the epilogue of `attrs` (a fused convolution's, `extras` its operands a1, a2... with
    `constant` flags) starts with add(a0, aK), aK of the out's float dtype and constant
    along every dimension of the out but its features (`output_feature_dim`), and reads a0
    nowhere else; None otherwise."""
    program = parse_program(str(attrs["program"]))
    first, *rest = program.steps
    operands = set(first.args)
    if first.opdef is not ops.add or len(operands) != 2 or (True, 0) not in operands:
        return None
    ((_, k),) = operands - {(True, 0)}
    if k == 0 or any((True, 0) in s.args for s in rest):
        return None
    arg = extras[k - 1]
    if arg.dtype != out.dtype or out.dtype not in NATIVE_FLOATS:
        return None
    feature = attr_of(attrs, "output_feature_dim", int)
    view = operand_view(arg, program.operand_dims[k], out.ndim)
    if any(n != 1 and st != 0 for d, (n, st) in enumerate(zip(view.shape, view.strides,
                                                               strict=True)) if d != feature):
        return None
    index = tuple(slice(None) if d == feature else 0 for d in range(out.ndim))
    bias = Bias(np.broadcast_to(view[index], (out.shape[feature],)), bool(constant[k - 1]))
    if not rest:
        return bias, None
    return bias, format_program(list(program.operand_dims),
                                after_first_step(step_texts(program)))


def kernel_matrix(w: np.ndarray, weights_fixed: bool, bias: Bias | None
                  ) -> tuple[np.ndarray, Callable[[], None] | None]:
    """The (O, K) kernel matrix of the weights w (O, C, kh, kw) (K = C * kh * kw, in that
    order), with the bias as a last column (O, K + 1) when given; and the step that copies
    into it again what may change (None when nothing may). The matrix is w itself when
    C-contiguous and there is no bias (no second copy of a model's weights), else a copy
    made now."""
    o, k = w.shape[0], math.prod(w.shape[1:])
    if bias is None and w.flags.c_contiguous:
        return w.reshape(o, k), None
    matrix = np.empty((o, k + (bias is not None)), w.dtype)
    copies = [(matrix[:, :k], w.reshape(o, k), weights_fixed)]  # w's copy when strided
    if bias is not None:
        copies.append((matrix[:, k], bias.values, bias.fixed))
    for target, source, _ in copies:
        np.copyto(target, source)
    changing = [(target, source) for target, source, fixed in copies if not fixed]
    if not changing:
        return matrix, None

    def refresh() -> None:
        for target, source in changing:
            np.copyto(target, source)

    return matrix, refresh
