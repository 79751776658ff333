"""Imports every lowering module so that each registers its opcodes."""

from nxcc.compiler.hlo import (  # noqa: F401
    lower_collective,
    lower_control,
    lower_custom_call,
    lower_elementwise,
    lower_indexing,
    lower_linalg,
    lower_p2p,
    lower_reduce,
    lower_rng,
    lower_shape,
)
