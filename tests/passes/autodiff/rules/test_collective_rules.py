"""Gradient rules of the collectives (the tensor-parallel convention: the loss replicated
over the group) checked against the gradient of the whole computation written in numpy,
with two ranks run as threads; `stop_gradients`; the refusal of a max all_reduce."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

from nxcc.backend.runtime.multicore import Communicator, run_cores
from nxcc.ir.attributes import AttrValue
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import IRContext
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.differentiate import GradientError, differentiate
from nxcc.passes.autodiff.losses import reduce_all

GROUPS = ((0, 1),)


class _Rank(IRContext):
    def __init__(self, module: Module, endpoint) -> None:
        super().__init__(module, partition_id=endpoint.rank)
        self.endpoint = endpoint

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        return self.endpoint.collective(opcode, args, attrs)


def _grad_on_two_ranks(build: Callable[[Builder, Value, Value], Value], x_shape, w_shape,
                       xs, ws) -> list[list[np.ndarray]]:
    """(loss, d loss / d x) on each rank of a program loss = build(x, w), x and w the
    rank's own inputs."""
    module = Module("m")
    x = Value(TensorType(DType.F64, x_shape), "x")
    w = Value(TensorType(DType.F64, w_shape), "w")
    fn = module.add_function(Function("main", [x, w]))
    b = Builder(module, fn)
    loss = build(b, x, w)
    fn.results = [loss, *differentiate(module, fn, [x], loss)]
    comm = Communicator(2)
    return run_cores([lambda r=r: _Rank(module, comm.endpoint(r)).call("main", [xs[r], ws[r]])
                      for r in range(2)], comm)


def _summed(b: Builder, y: Value) -> Value:
    return b.all_reduce(reduce_all(b, y), reduction="sum", replica_groups=GROUPS)


def test_all_gather_gradient_is_a_reduce_scatter() -> None:
    rng = np.random.default_rng(0)
    xs, ws = rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 4, 3))

    def build(b: Builder, x: Value, w: Value) -> Value:
        full = b.all_gather(x, dimension=0, replica_groups=GROUPS)
        return _summed(b, b.multiply(b.multiply(full, full), w))

    outs = _grad_on_two_ranks(build, (2, 3), (4, 3), xs, ws)
    full = np.concatenate(xs)
    want = (2 * full * ws.sum(0)).reshape(2, 2, 3)
    assert outs[0][0] == pytest.approx(float((full * full * ws).sum()))
    for r in range(2):
        np.testing.assert_allclose(outs[r][1], want[r], rtol=1e-12)


def test_reduce_scatter_and_tp_copy_gradients() -> None:
    rng = np.random.default_rng(1)
    xs, ws = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 2, 3))

    def build(b: Builder, x: Value, w: Value) -> Value:
        copied = b.tp_copy(x, replica_groups=GROUPS)  # x replicated: the same on both
        part = b.reduce_scatter(b.multiply(copied, copied), dimension=0, reduction="sum",
                                replica_groups=GROUPS)
        return _summed(b, b.multiply(part, w))

    same = np.stack([xs[0], xs[0]])
    outs = _grad_on_two_ranks(build, (4, 3), (2, 3), same, ws)
    # loss = sum_r sum(2 x^2 [block r] * w_r): d/dx = 4 x * concat(w_0, w_1), on each rank
    want = 4 * xs[0] * np.concatenate(ws)
    for r in range(2):
        np.testing.assert_allclose(outs[r][1], want, rtol=1e-12)


def test_max_all_reduce_has_no_gradient() -> None:
    def build(b: Builder, x: Value, w: Value) -> Value:
        top = b.all_reduce(reduce_all(b, x), reduction="max", replica_groups=GROUPS)
        return top

    with pytest.raises(GradientError, match="all_reduce with reduction max"):
        _grad_on_two_ranks(build, (2,), (2,), np.zeros((2, 2)), np.zeros((2, 2)))


def test_stop_gradients_treats_a_value_as_constant() -> None:
    module = Module("m")
    x = Value(TensorType(DType.F64, (3,)), "x")
    fn = module.add_function(Function("main", [x]))
    b = Builder(module, fn)
    frozen = b.copy(x)
    loss = reduce_all(b, b.multiply(x, frozen))
    fn.results = differentiate(module, fn, [x], loss, stop_gradients=[frozen])
    value = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(IRContext(module).call("main", [value])[0], value)
