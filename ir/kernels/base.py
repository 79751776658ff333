"""The kernel contract: one vectorized numpy kernel per core op.

A kernel is called as ``kernel(args, outs, attrs, ctx)``:

- `args`: the operand arrays, of exactly the operand types (read-only: never write to them);
- `outs`: preallocated arrays of exactly the result types (the executor's planned buffers,
  possibly views into one arena); the kernel writes every element of every out, with
  `out=` arguments or `np.copyto`, and returns nothing. Outs never overlap args.
- `attrs`: the op's attributes, already checked and completed with defaults;
- `ctx`: a `KernelContext`, to run the functions the op refers to (reduction
  computations, loop bodies) and to reach the collective communicator.

No kernel loops in Python over tensor elements. Loops over a small, shape-derived count
(window positions of a pooling kernel, loop iterations of ``while``) are fine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from nxcc.ir.attributes import AttrValue


class KernelContext(Protocol):
    """What the executor offers a kernel."""

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run module function `function` on `args` (whole arrays) and return its results.

        A scalar computation (the reducer of reduce, a sort comparator) applied to arrays of
        equal shape computes elementwise: that is how kernels vectorize a general reducer.
        """
        ...

    def binary_opcode(self, function: str) -> str | None:
        """The opcode when `function` is one binary op of its two parameters (``add``,
        ``maximum``...), in either order; None otherwise. Lets kernels use ufunc.reduce."""
        ...

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        """Perform a bound collective for this core and return its results."""
        ...


Kernel = Callable[[Sequence[np.ndarray], Sequence[np.ndarray], Mapping[str, AttrValue],
                   KernelContext], None]

KERNELS: dict[str, Kernel] = {}


def kernel(*opcodes: str) -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the kernel of each of `opcodes`."""

    def register(fn: Kernel) -> Kernel:
        for name in opcodes:
            if name in KERNELS:
                raise ValueError(f"kernel for {name} registered twice")
            KERNELS[name] = fn
        return fn

    return register


def get_kernel(opcode: str) -> Kernel:
    """The kernel of `opcode`; KeyError naming it when none is registered."""
    from nxcc.ir.kernels import registry  # noqa: F401  (imports every kernel module)

    try:
        return KERNELS[opcode]
    except KeyError:
        raise KeyError(f"no kernel for op '{opcode}'") from None
