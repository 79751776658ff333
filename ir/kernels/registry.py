"""Imports every kernel module, so that each registers its kernels in `KERNELS`."""

from __future__ import annotations

from nxcc.ir.kernels import (  # noqa: F401
    binary,
    collective,
    control,
    convert,
    convolution,
    elementwise,
    from_defs,
    fused,
    fused_convolution,
    gather,
    indexing,
    linalg,
    normalize,
    random,
    reduction,
    scatter,
    shape,
    sort,
    unary,
    windowed,
)
