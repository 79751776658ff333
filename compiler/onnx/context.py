"""What a converter sees of its node, and the lowering helpers every converter family uses.

`NodeContext` gives typed access to a node's inputs (as IR values), its attributes (strings
decoded, tensors as numpy arrays) and the compile-time values of constant inputs. The free
functions build common patterns of core ops: numpy-style broadcasting of binary ops,
reductions with a reducer computation, splat constants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import onnx

from nxcc.compiler.onnx.errors import DYNAMIC, INVALID_NODE, UNSUPPORTED_FEATURE, FrontendError
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Function, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef
from nxcc.ir.rewrite import constant_value


def const_value(v: Value | None) -> np.ndarray | None:
    """The compile-time value of `v` when a ``constant`` op produces it, else None."""
    d = constant_value(v)
    return None if d is None else d.array


class GraphConverter(Protocol):
    """What converts a node's subgraph attributes (If branches, Loop and Scan bodies)."""

    def subgraph(self, graph: onnx.GraphProto, params: Sequence[Value], name: str,
                 label: str) -> tuple[Function, list[Value]]:
        """`graph` as a new function of `params` then its captured outer values; returns
        the function and the outer values a call must pass for the captures."""
        ...

    def inline_graph(self, graph: onnx.GraphProto, label: str,
                     bindings: dict[str, Value] | None = None) -> list[Value]:
        """The outputs of `graph`, converted in place, its inputs bound to `bindings`."""
        ...


@dataclass
class NodeContext:
    """One ONNX node being converted: `inputs[i]` is None for an omitted optional input."""

    b: Builder
    node: onnx.NodeProto
    opset: int
    inputs: list[Value | None]
    attrs: dict[str, Any]
    label: str  # how messages name the node
    graphs: GraphConverter | None = None  # for ops with subgraphs

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def num_outputs(self) -> int:
        return len(self.node.output)

    def output_used(self, i: int) -> bool:
        """Whether the node names output `i` (optional outputs may be omitted or empty)."""
        return i < len(self.node.output) and self.node.output[i] != ""

    # -- errors ------------------------------------------------------------------------
    def fail(self, message: str, code: str = INVALID_NODE, value: str | None = None
             ) -> FrontendError:
        """A FrontendError about this node (to raise)."""
        return FrontendError(f"node '{self.label}' ({self.op_type}): {message}", code, value)

    def unsupported(self, message: str) -> FrontendError:
        return self.fail(f"{message} is not supported", UNSUPPORTED_FEATURE)

    # -- inputs ------------------------------------------------------------------------
    def input(self, i: int, what: str = "") -> Value:
        """Input `i`, which must be present."""
        v = self.inputs[i] if i < len(self.inputs) else None
        if v is None:
            raise self.fail(f"needs input {i}{f' ({what})' if what else ''}")
        return v

    def optional(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def const(self, i: int) -> np.ndarray | None:
        """The compile-time value of input `i` (None if absent or not a constant)."""
        return const_value(self.optional(i))

    def const_input(self, i: int, what: str) -> np.ndarray:
        """The compile-time value of input `i`; FrontendError (NCC_EMOD025) if not known."""
        self.input(i, what)
        value = self.const(i)
        if value is None:
            raise self.fail(
                f"input {i} ('{what}') must be known at compile time (a constant or computed "
                "from constants and static shapes)", DYNAMIC, self.node.input[i])
        return np.asarray(value)

    def ints_input(self, i: int, what: str) -> list[int] | None:
        """Optional input `i` as a list of ints (None when omitted)."""
        if self.optional(i) is None:
            return None
        return [int(x) for x in self.const_input(i, what).reshape(-1)]

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def axis(self, axis: int, rank: int) -> int:
        """`axis` normalised to [0, rank); FrontendError if out of range."""
        if not -rank <= axis < max(rank, 1):
            raise self.fail(f"axis {axis} is out of range for rank {rank}")
        return axis % rank if rank else 0

    def axes(self, axes: Sequence[int], rank: int) -> list[int]:
        out = [self.axis(a, rank) for a in axes]
        if len(set(out)) != len(out):
            raise self.fail(f"axes {list(axes)} repeat a dimension")
        return out


# -- lowering helpers ------------------------------------------------------------------

def splat_like(b: Builder, value: float | int | bool, like: Value) -> Value:
    """A constant of `like`'s type whose every element is `value`."""
    return b.splat(value, like.type)


def scalar(b: Builder, value: float | int | bool, dtype: DType) -> Value:
    return b.constant(np.array(value, dtype=dtype.numpy))


def broadcast_shapes(ctx: NodeContext | None, *shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        msg = f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast"
        if ctx is None:
            raise FrontendError(msg, INVALID_NODE) from None
        raise ctx.fail(msg) from None


def broadcast_all(b: Builder, values: Sequence[Value], ctx: NodeContext | None = None
                  ) -> list[Value]:
    """`values` broadcast numpy-style to their common shape."""
    shape = broadcast_shapes(ctx, *[v.type.shape for v in values])
    return [b.broadcast_to(v, shape) for v in values]


def binary(b: Builder, opcode: OpDef | str, x: Value, y: Value, ctx: NodeContext | None = None
           ) -> Value:
    """`opcode` applied to `x` and `y` with numpy broadcasting."""
    x, y = broadcast_all(b, [x, y], ctx)
    return b.op(opcode, [x, y])


def compare(b: Builder, direction: str, x: Value, y: Value, ctx: NodeContext | None = None
            ) -> Value:
    x, y = broadcast_all(b, [x, y], ctx)
    return b.op(ops.compare, [x, y], {"direction": direction})


def lowest(dtype: DType) -> float | int | bool:
    """The identity of maximum over `dtype` (-inf for floats)."""
    if dtype.is_float:
        return float("-inf")
    if dtype.is_pred:
        return False
    return int(np.iinfo(dtype.numpy).min)


def highest(dtype: DType) -> float | int | bool:
    """The identity of minimum over `dtype` (+inf for floats)."""
    if dtype.is_float:
        return float("inf")
    if dtype.is_pred:
        return True
    return int(np.iinfo(dtype.numpy).max)


#: a reducer -> its identity, or the function giving it for a dtype
REDUCER_INIT: dict[OpDef, int | Callable[[DType], float | int | bool]] = {
    ops.add: 0, ops.multiply: 1, ops.maximum: lowest, ops.minimum: highest}


def reduce(b: Builder, x: Value, dims: Sequence[int], opcode: OpDef, keepdims: bool = False
           ) -> Value:
    """`x` reduced over `dims` with binary op `opcode` (add, multiply, maximum, minimum),
    the reduced dimensions kept as size 1 when `keepdims`."""
    dtype = x.type.dtype
    init = REDUCER_INIT[opcode]
    init_value = init(dtype) if callable(init) else init
    dims = sorted(dims)
    if not dims:
        return x
    out = b.op(ops.reduce, [x, scalar(b, init_value, dtype)], {
        "dimensions": tuple(dims),
        "computation": binary_computation(b.module, opcode, dtype),
    })
    if keepdims:
        shape = [1 if d in dims else n for d, n in enumerate(x.type.shape)]
        out = b.reshape(out, shape)
    return out


def keep_shape(shape: Sequence[int], dims: Sequence[int]) -> list[int]:
    """`shape` with `dims` set to 1."""
    return [1 if d in dims else n for d, n in enumerate(shape)]


def broadcast_along(b: Builder, v: Value, shape: Sequence[int], dim: int) -> Value:
    """1-D `v` broadcast to `shape`, its only dimension mapped to `dim`."""
    return b.op(ops.broadcast_in_dim, [v], {"shape": tuple(shape), "broadcast_dimensions": (dim,)})


def float_type_of(ctx: NodeContext, v: Value) -> DType:
    """`v`'s element type, which must be a float type."""
    if not v.type.dtype.is_float:
        raise ctx.fail(f"expects a floating-point input, got {v.type}")
    return v.type.dtype
