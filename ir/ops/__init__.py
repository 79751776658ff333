"""The core op set (modelled on XLA HLO). Importing this package registers every op."""

from nxcc.ir.ops import (  # noqa: F401
    collective,
    control,
    elementwise,
    indexing,
    linalg,
    random,
    reduction,
    shape,
)
