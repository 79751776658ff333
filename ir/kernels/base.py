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
from nxcc.ir.opdef import OpDef
from nxcc.ir.registry import OpTable


class KernelContext(Protocol):
    """What the executor offers a kernel."""

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run module function `function` on `args` (whole arrays) and return its results.

        A scalar computation (the reducer of reduce, a sort comparator) applied to arrays of
        equal shape computes elementwise: that is how kernels vectorize a general reducer.
        """
        ...

    def binary_op(self, function: str) -> OpDef | None:
        """The op's definition when `function` is one binary op of its two parameters
        (``ops.add``, ``ops.maximum``...), in either order; None otherwise. Lets kernels
        use ufunc.reduce."""
        ...

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        """Perform a bound collective for this core and return its results."""
        ...


Kernel = Callable[[Sequence[np.ndarray], Sequence[np.ndarray], Mapping[str, AttrValue],
                   KernelContext], None]


class _NoCalls:
    """The context of an elementwise kernel run outside an executor (a fused program's
    step, a planned softmax's exp): such an op calls no function and joins no collective."""

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise TypeError(f"no function to call here: @{function}")

    def binary_op(self, function: str) -> OpDef | None:
        return None

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        raise TypeError(f"no communicator here for {opcode}")


#: the `KernelContext` of an elementwise kernel outside an executor
NO_CALLS: KernelContext = _NoCalls()


def load_kernels() -> None:
    """Import every kernel module (each registers its kernels and plans).

    Run by the tables on their first lookup, not at import: the elementwise op definitions
    (`ir/ops/elementwise.py`) take their functions from modules of this package, and the
    kernel modules register against those definitions, so they can be imported only once
    every op is defined."""
    from nxcc.ir.kernels import registry  # noqa: F401  (imports every kernel module)


#: op definition -> its kernel; lookups also take the op's text name.
KERNELS: OpTable[Kernel] = OpTable("kernel", load=load_kernels)

#: ``@kernel(ops.erf, ...)`` registers the decorated function as the kernel of those ops.
kernel = KERNELS.register


def get_kernel(opcode: str | OpDef) -> Kernel:
    """The kernel of `opcode` (a definition or a text name); KeyError naming it if none."""
    return KERNELS[opcode]
