"""The gradient rules, one module per op family; importing this package registers them."""

from nxcc.passes.autodiff.rules import (  # noqa: F401
    collective,
    control,
    elementwise,
    indexing,
    linalg,
    nondifferentiable,
    reduction,
    shape,
    windowed,
)
