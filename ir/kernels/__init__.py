"""The numpy kernels of the core ops: `get_kernel(opcode)` and the `KERNELS` table."""

from nxcc.ir.kernels import registry  # noqa: F401  (registers every kernel)
from nxcc.ir.kernels.base import KERNELS, KernelContext, get_kernel

__all__ = ["KERNELS", "KernelContext", "get_kernel"]
