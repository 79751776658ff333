"""The kernels of the unary and binary elementwise ops, made from their definitions: an
`ElementwiseDef` carries its numpy function and whether floats are evaluated in float64, and
`unary_kernel` / `binary_kernel` turn that into a kernel. No per-op table here: a new op of
these families gets its kernel from its definition alone."""

from __future__ import annotations

from nxcc.ir.kernels.base import KERNELS, Kernel
from nxcc.ir.kernels.binary import binary_kernel
from nxcc.ir.kernels.unary import unary_kernel
from nxcc.ir.opdef import ElementwiseDef, all_opdefs


def derived_kernel(opdef: ElementwiseDef) -> Kernel:
    """The kernel `opdef`'s fields describe."""
    assert opdef.fn is not None, opdef.name
    if opdef.operands == 1:
        return unary_kernel(opdef.fn, opdef.precise, opdef.float32_native)
    return binary_kernel(opdef.fn, opdef.precise)


for _def in all_opdefs():
    if isinstance(_def, ElementwiseDef):
        KERNELS.add(_def, derived_kernel(_def))
