"""The numpy kernels of the core ops: `get_kernel(op)` and the `KERNELS` table (keyed by op
definition). The kernel modules are imported, registering their kernels, on first lookup."""

from nxcc.ir.kernels.base import KERNELS, KernelContext, get_kernel

__all__ = ["KERNELS", "KernelContext", "get_kernel"]
