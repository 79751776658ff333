"""A minimal kernel context for the kernel tests, and helpers to run one op.

`FakeCtx.call` interprets a module function op by op with the kernels themselves (a scalar
computation applied to whole arrays runs elementwise: outs of elementwise ops, and of
same-size bitcast_convert, take the broadcast shape of their args). `run_op` builds a one-op function with `ir.Builder`, makes
its args read-only, fills its outs with garbage (so every element must be written) and calls
the kernel directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir import Builder, DType, Function, Module, TensorType, Value
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels import get_kernel
from nxcc.ir.opdef import OpDef, get_opdef

Collective = Callable[[str, Sequence[np.ndarray], Mapping[str, AttrValue]], list[np.ndarray]]


class FakeCtx:
    """Runs module functions with the kernels; collectives go to an optional callback."""

    def __init__(self, module: Module, partition_id: int = 0, replica_id: int = 0,
                 collective: Collective | None = None) -> None:
        self.module = module
        self.partition_id = partition_id
        self.replica_id = replica_id
        self._collective = collective
        self.calls: list[str] = []

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        self.calls.append(function)
        fn = self.module.functions[function]
        env: dict[int, np.ndarray] = {id(p): np.asarray(a) for p, a in
                                      zip(fn.params, args, strict=True)}
        for op in fn.body:
            vals = [env[id(v)] for v in op.operands]
            outs = _alloc(op.opcode, vals, [r.type for r in op.results])
            get_kernel(op.opcode)(vals, outs, op.attrs, self)
            for r, o in zip(op.results, outs, strict=True):
                env[id(r)] = o
        return [env[id(r)] for r in fn.results]

    def binary_op(self, function: str) -> OpDef | None:
        fn = self.module.functions[function]
        if len(fn.params) != 2 or len(fn.body) != 1 or len(fn.results) != 1:
            return None
        op = fn.body[0]
        if fn.results[0] is not op.results[0] or len(op.operands) != 2:
            return None
        if {id(v) for v in op.operands} != {id(p) for p in fn.params}:
            return None
        return op.opdef

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        if self._collective is None:
            raise RuntimeError("no communicator in this test")
        return self._collective(opcode, args, attrs)


def garbage(t: TensorType) -> np.ndarray:
    """An array of type `t` filled with arbitrary bytes."""
    rng = np.random.default_rng(1234)
    dtype = t.dtype.numpy
    raw = rng.integers(0, 256, size=t.size * dtype.itemsize, dtype=np.uint8)
    if dtype == np.bool_:
        raw = raw & 1
    return raw.view(dtype).reshape(t.shape).copy()


def _alloc(opcode: str, vals: Sequence[np.ndarray], types: Sequence[TensorType]
           ) -> list[np.ndarray]:
    same_size_bitcast = (opcode == "bitcast_convert"
                         and vals[0].dtype.itemsize == types[0].dtype.itemsize)
    if (get_opdef(opcode).elementwise or same_size_bitcast) and vals:
        shape = np.broadcast_shapes(*(v.shape for v in vals))
        return [np.empty(shape, t.dtype.numpy) for t in types]
    return [garbage(t) for t in types]


def type_of(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), tuple(a.shape))


def readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def run_op(opcode: str, arrays: Sequence[np.ndarray], attrs: Mapping[str, object] | None = None,
           module: Module | None = None, ctx: FakeCtx | None = None) -> list[np.ndarray]:
    """Build `opcode` on params of the arrays' types, run its kernel, return its outs."""
    module = module if module is not None else Module("test")
    params = [Value(type_of(np.asarray(a)), f"p{i}") for i, a in enumerate(arrays)]
    fn = Function(module.unique_function_name("main"), params)
    module.add_function(fn)
    op = Builder(module, fn).create(opcode, params, attrs or {})
    outs = [garbage(r.type) for r in op.results]
    ctx = ctx if ctx is not None else FakeCtx(module)
    get_kernel(opcode)([readonly(np.asarray(a)) for a in arrays], outs, op.attrs, ctx)
    return outs


def run1(opcode: str, arrays: Sequence[np.ndarray], attrs: Mapping[str, object] | None = None,
         module: Module | None = None) -> np.ndarray:
    """`run_op` for single-result ops."""
    (out,) = run_op(opcode, arrays, attrs, module)
    return out


def scalar_function(module: Module, name: str, dtypes: Sequence[DType],
                    body: Callable[[Builder, list[Value]], list[Value]]) -> str:
    """Add function `name` taking scalars of `dtypes`, built by `body(builder, params)`."""
    params = [Value(TensorType(d, ()), f"x{i}") for i, d in enumerate(dtypes)]
    fn = Function(name, params)
    module.add_function(fn)
    fn.results = list(body(Builder(module, fn), params))
    return name
