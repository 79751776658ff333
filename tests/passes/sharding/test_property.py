"""Property: random elementwise / matmul / reduce graphs give the same outputs compiled for
trn2 at -lnc 2 (sharded over two cores, run concurrently) as at -lnc 1. Some values carry
random shardings of their own (as a frontend's annotations would), which forces reshards
the cost model alone would avoid."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nxcc.backend.neff import read_neff
from nxcc.backend.program.package import NeffSpec, write_program_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.sharding_stage import core_programs
from nxcc.ir.builder import Builder
from nxcc.ir.clone import clone_module
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.parser import parse_module
from nxcc.ir.sharding import Sharding
from nxcc.ir.types import TensorType
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import pipeline
from tests.passes.sharding.ir_check import COMPUTATIONS as SCALAR_COMPUTATIONS

SIZES = (1, 2, 3, 4, 6, 8, 32)
COMPUTATIONS = parse_module("module @c {\n  func @main() -> () {\n    return\n  }"
                            + SCALAR_COMPUTATIONS)


def build(data: st.DataObject) -> Module:
    """A random module: 1-2 inputs, 2-7 ops, its last value (and maybe another) returned."""
    module = Module("random")
    for name in ("sum", "max"):
        module.add_function(COMPUTATIONS.functions[name])
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    shape = tuple(data.draw(st.sampled_from(SIZES)) for _ in range(data.draw(st.integers(2, 3))))
    params = [Value(TensorType(DType.F32, shape), "x")]
    if data.draw(st.booleans(), label="two inputs"):
        params.append(Value(TensorType(DType.F32, shape), "y"))
    fn = Function("main", params)
    module.add_function(fn)
    b = Builder(module, fn)
    values = list(params)

    def weight(shape: tuple[int, ...]) -> Value:
        return b.constant(rng.standard_normal(shape).astype(np.float32) * 0.5)

    for _ in range(data.draw(st.integers(2, 7), label="ops")):
        v = data.draw(st.sampled_from(values))
        kind = data.draw(st.sampled_from(["unary", "binary", "matmul", "reduce", "transpose"]))
        t = v.type
        if kind == "unary":
            v = b.op(data.draw(st.sampled_from(["tanh", "negate", "abs", "logistic"])), [v])
        elif kind == "binary":
            same = [u for u in values if u.type == t and u is not v]
            other = data.draw(st.sampled_from(same)) if same and data.draw(st.booleans()) \
                else weight(t.shape)
            op = data.draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
            v = b.op(op, [v, other])
        elif kind == "matmul":
            n = data.draw(st.sampled_from(SIZES), label="features")
            v = b.dot_general(v, weight((t.shape[-1], n)), lhs_contracting_dims=(t.rank - 1,),
                              rhs_contracting_dims=(0,))
        elif kind == "reduce" and t.rank > 1:
            dim = data.draw(st.integers(0, t.rank - 1), label="dim")
            reducer = data.draw(st.sampled_from(["sum", "max"]))
            init = b.constant(np.float32(0.0 if reducer == "sum" else -np.inf))
            v = b.op("reduce", [v, init], {"dimensions": (dim,), "computation": reducer})
        elif kind == "transpose" and t.rank > 1:
            perm = tuple(data.draw(st.permutations(range(t.rank))))
            v = b.op("transpose", [v], {"permutation": perm})
        values.append(v)
    for v in values:  # the user's own shardings, which the passes must honour
        if data.draw(st.integers(0, 3), label="annotate") == 0:
            dims = [d for d, n in enumerate(v.type.shape) if n % 2 == 0]
            choice = data.draw(st.sampled_from([None, *dims]), label="split")
            v.sharding = (Sharding.replicated() if choice is None
                          else Sharding.split(v.type.rank, choice, 2))
    fn.results = [values[-1]]
    if data.draw(st.booleans(), label="second output") and values[-2] is not values[-1]:
        fn.results.append(values[-2])
    fn.result_names = [f"out{i}" for i in range(len(fn.results))]
    return module


def run(module: Module, lnc: int, inputs: dict[str, np.ndarray], path: Path) -> dict:
    PassManager(pipeline(2)).run(module)
    cores, _ = core_programs(module, lnc, frozenset(), print)
    write_program_neff(str(path), cores, NeffSpec(target="trn2", lnc=lnc, name="random"))
    return LoadedModel(read_neff(path)).execute(inputs)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lnc2_computes_what_lnc1_computes(data: st.DataObject) -> None:
    module = build(data)
    rng = np.random.default_rng(1)
    inputs = {p.name: rng.standard_normal(p.type.shape).astype(np.float32)
              for p in module.entry_function.params}
    with tempfile.TemporaryDirectory() as tmp:
        one = run(clone_module(module), 1, inputs, Path(tmp) / "one.neff")
        two = run(module, 2, inputs, Path(tmp) / "two.neff")
    for name, expected in one.items():
        np.testing.assert_allclose(two[name], expected, rtol=1e-5, atol=1e-5)
