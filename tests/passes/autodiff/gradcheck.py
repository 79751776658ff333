"""Checking a gradient rule against central finite differences, in float64.

`check_gradients(build, inputs)` makes a module whose entry takes `inputs` (name -> array),
applies `build(builder, params)` and reduces its result to a scalar loss against a fixed
random weighting (so every output element carries a different cotangent), differentiates
with `passes.autodiff.differentiate` and compares the gradient of every float input with
(f(x + h e_i) - f(x - h e_i)) / 2h, all evaluated by the IR interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import IRContext
from nxcc.ir.types import TensorType
from nxcc.ir.verifier import verify_module
from nxcc.passes.autodiff.differentiate import differentiate

Build = Callable[[Builder, list[Value]], Value]
STEP = 1e-6


def weighted_sum(b: Builder, y: Value, weights: np.ndarray) -> Value:
    """sum(y * weights) as a scalar."""
    w = b.constant(weights.astype(y.type.dtype.numpy))
    prod = b.multiply(y, w)
    if y.type.rank == 0:
        return prod
    return b.op("reduce", [prod, b.splat(0, TensorType(y.type.dtype, ()))], {
        "dimensions": tuple(range(y.type.rank)),
        "computation": binary_computation(b.module, "add", y.type.dtype)})


def make_module(build: Build, inputs: Mapping[str, np.ndarray], seed: int
                ) -> tuple[Module, Function, list[Value]]:
    module = Module("grad_check")
    params = [Value(TensorType(DType.from_numpy(a.dtype), a.shape), n)
              for n, a in inputs.items()]
    fn = module.add_function(Function("main", params))
    b = Builder(module, fn)
    y = build(b, params)
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, y.type.shape)
    fn.results = [weighted_sum(b, y, weights)]
    fn.result_names = ["loss"]
    return module, fn, params


def check_gradients(build: Build, inputs: Mapping[str, np.ndarray], seed: int = 0,
                    rtol: float = 1e-5, atol: float = 1e-6,
                    wrt: Sequence[str] | None = None, step: float = STEP) -> None:
    """AssertionError naming the input and element where the gradient is off."""
    module, fn, params = make_module(build, inputs, seed)
    loss = fn.results[0]
    chosen = [p for p in params if p.type.dtype.is_float and (wrt is None or p.name in wrt)]
    grads = differentiate(module, fn, chosen, loss)
    fn.results = [loss, *grads]
    fn.result_names = ["loss", *(f"grad.{p.name}" for p in chosen)]
    verify_module(module)
    ctx = IRContext(module)
    args = [np.asarray(inputs[p.name or ""]) for p in params]
    got = ctx.call("main", args)[1:]

    def f(values: list[np.ndarray]) -> float:
        return float(ctx.call("main", values)[0])

    for p, g in zip(chosen, got, strict=True):
        index = params.index(p)
        x = args[index]
        expected = np.zeros(x.shape)
        for i in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[i] += step
            minus[i] -= step
            expected[i] = (f([*args[:index], plus, *args[index + 1:]])
                           - f([*args[:index], minus, *args[index + 1:]])) / (2 * step)
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of {p.name}")
