"""The kernel of `fused_convolution`: the convolution, then its epilogue in place.

The convolution writes its result into the out (`convolution.py`), and the epilogue program
(a0 the convolution's result, a1... the operands after the first two) is evaluated on it in
place, block by block (`fused.prepare_fused`): no buffer of its own for the product, no
separate pass reading one array and writing another. On the tiled routes (`conv_rows`,
`conv_tiles`) the epilogue goes further: each tile's rows go from the tile's product
buffer, still in cache, through the epilogue into the out (`fused.prepare_epilogue`), in
place of the copy those routes make anyway. The epilogue's steps are the ones
`fused_elementwise` would run, on the same values, so the result is the bits of the
convolution followed by that op; except that the plan takes an epilogue's leading bias
add into the product where the route has a column matrix (`conv_bias`), which changes
the rounding of the sum only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import in_order
from nxcc.ir.kernels.conv_bias import fold_bias
from nxcc.ir.kernels.conv_rows import Finish
from nxcc.ir.kernels.convolution import convolution, prepare_convolution
from nxcc.ir.kernels.fused import prepare_epilogue, prepare_fused
from nxcc.ir.kernels.plan import plan
from nxcc.ir.kernels.scratch_pool import ScratchPool


@kernel(ops.fused_convolution)
def fused_convolution(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                      attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = the program on the convolution of args[0] and args[1] and on args[2:]."""
    convolution(args[:2], outs, attrs, ctx)
    with np.errstate(all="ignore"):
        prepare_fused([outs[0], *args[2:]], outs[0], attrs)()


@plan(ops.fused_convolution, dense_constants=(0, 1), strided_out=True)
def fused_convolution_plan(args: Sequence[np.ndarray], out: np.ndarray,
                           attrs: Mapping[str, AttrValue], ctx: KernelContext,
                           constant: Sequence[bool], pool: ScratchPool
                           ) -> Callable[[], None]:
    """On the row route, the epilogue applied to each tile on its way to the out; else the
    convolution's kernel, then the epilogue planned once, in place on the out."""
    extras, extras_fixed = list(args[2:]), list(constant[2:])
    folded = fold_bias(extras, extras_fixed, out, attrs)
    if folded is not None:  # the bias in the product, the rest of the program after it
        bias, rest = folded
        after = None if rest is None else _finish(extras, extras_fixed, out,
                                                  {**attrs, "program": rest})
        step = prepare_convolution(args[:2], out, attrs, constant[:2], pool, after, bias)
        if step is not None:
            return step
    rows = prepare_convolution(args[:2], out, attrs, constant[:2], pool,
                               _finish(extras, extras_fixed, out, attrs))
    if rows is not None:
        return rows
    return in_order([functools.partial(convolution, list(args[:2]), [out], attrs, ctx),
                     prepare_fused([out, *extras], out, attrs, [False, *extras_fixed])])


def _finish(extras: list[np.ndarray], extras_fixed: list[bool], out: np.ndarray,
            attrs: Mapping[str, AttrValue]) -> Finish:
    """The epilogue of `attrs` as a `conv_rows.Finish`: the tiles, which run one after
    another, share its block-sized buffers."""
    return functools.partial(prepare_epilogue, args=extras, out=out, attrs=attrs,
                             constant=extras_fixed, buffers={})

