"""call, while, conditional, partition/replica ids, collectives, and kernel coverage."""

from __future__ import annotations

import numpy as np

import nxcc.ir.ops  # noqa: F401  (registers the core ops)
from nxcc import ir
from nxcc.ir import Builder, DType, Module, Value
from nxcc.ir.kernels import KERNELS, get_kernel
from tests.ir.kernels.fake_ctx import FakeCtx, run_op, scalar_function


def test_every_op_has_a_kernel() -> None:
    get_kernel("add")
    assert set(KERNELS) == set(ir.OP_DEFS.values())


def _counter_module() -> tuple[Module, str, str]:
    module = Module("m")

    def cond(b: Builder, p: list[Value]) -> list[Value]:
        return [b.compare(p[0], b.constant(np.int32(10)), direction="LT")]

    def body(b: Builder, p: list[Value]) -> list[Value]:
        return [b.add(p[0], b.constant(np.int32(1))), b.multiply(p[1], b.constant(2.0, DType.F32))]

    c = scalar_function(module, "cond", [DType.S32, DType.F32], cond)
    bd = scalar_function(module, "body", [DType.S32, DType.F32], body)
    return module, c, bd


def test_while_counts_to_ten() -> None:
    module, cond, body = _counter_module()
    i, acc = run_op("while", [np.array(0, np.int32), np.array(1.0, np.float32)],
                    {"condition": cond, "body": body}, module)
    assert int(i) == 10 and float(acc) == 1024.0
    i, acc = run_op("while", [np.array(12, np.int32), np.array(3.0, np.float32)],
                    {"condition": cond, "body": body}, module)
    assert int(i) == 12 and float(acc) == 3.0


def test_call() -> None:
    module, _, body = _counter_module()
    i, acc = run_op("call", [np.array(4, np.int32), np.array(1.5, np.float32)],
                    {"callee": body}, module)
    assert int(i) == 5 and float(acc) == 3.0


def test_conditional_pred_and_index() -> None:
    module = Module("m")
    neg = scalar_function(module, "neg", [DType.F32], lambda b, p: [b.negate(p[0])])
    dbl = scalar_function(module, "dbl", [DType.F32], lambda b, p: [b.add(p[0], p[0])])
    sqr = scalar_function(module, "sqr", [DType.F32], lambda b, p: [b.multiply(p[0], p[0])])
    x = np.array(3.0, np.float32)
    for sel, want in ((True, -3.0), (False, 6.0)):
        (got,) = run_op("conditional", [np.array(sel), x], {"branches": (neg, dbl)}, module)
        assert float(got) == want
    for sel, want in ((0, -3.0), (1, 6.0), (2, 9.0), (7, 9.0), (-1, 9.0)):
        (got,) = run_op("conditional", [np.array(sel, np.int32), x],
                        {"branches": (neg, dbl, sqr)}, module)
        assert float(got) == want


def test_partition_and_replica_id() -> None:
    module = Module("m")
    ctx = FakeCtx(module, partition_id=3, replica_id=5)
    (p,) = run_op("partition_id", [], {}, module, ctx)
    (r,) = run_op("replica_id", [], {}, module, ctx)
    assert p.dtype == np.uint32 and int(p) == 3 and int(r) == 5
    (p0,) = run_op("partition_id", [], {}, module)
    assert int(p0) == 0


def test_collectives_delegate() -> None:
    seen = []

    def communicator(opcode, args, attrs):
        seen.append((opcode, dict(attrs)))
        x = args[0]
        if opcode == "all_gather":
            return [np.concatenate([x, x + 100], axis=attrs["dimension"])]
        if opcode == "reduce_scatter":
            return [np.split(x, 2, axis=attrs["dimension"])[0] * 2]
        if opcode == "all_to_all":
            parts = np.split(x, 2, axis=attrs["split_dimension"])
            return [np.concatenate(parts, axis=attrs["concat_dimension"])]
        return [a * 2 for a in args]

    module = Module("m")
    ctx = FakeCtx(module, collective=communicator)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    groups = {"replica_groups": ((0, 1),)}
    a, b = run_op("all_reduce", [x, x + 1], {"reduction": "sum", **groups}, module, ctx)
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(b, 2 * (x + 1))
    (g,) = run_op("all_gather", [x], {"dimension": 0, **groups}, module, ctx)
    np.testing.assert_array_equal(g, np.concatenate([x, x + 100]))
    (s,) = run_op("reduce_scatter", [x], {"dimension": 1, "reduction": "sum", **groups},
                  module, ctx)
    np.testing.assert_array_equal(s, x[:, :2] * 2)
    (t,) = run_op("all_to_all", [x], {"split_dimension": 1, "concat_dimension": 0, **groups},
                  module, ctx)
    assert t.shape == (4, 2)
    (c,) = run_op("collective_permute", [x], {"source_target_pairs": ((0, 1), (1, 0))},
                  module, ctx)
    np.testing.assert_array_equal(c, 2 * x)
    assert [op for op, _ in seen] == ["all_reduce", "all_gather", "reduce_scatter",
                                     "all_to_all", "collective_permute"]
