"""The stash of a split backward is a minimum cut: no other choice of values to keep, from
which the backward can recompute what it reads by cheap ops, takes fewer bytes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nxcc.ir.core import Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.stash_cut import choose_stash, recomputable


def _t(n: int) -> TensorType:
    return TensorType(DType.F32, (n,))


def _op(opcode: str, operands: list[Value], n: int) -> Op:
    return Op(opcode, operands, [_t(n)])


def test_elementwise_chains_are_recomputed_from_the_product_they_start_at() -> None:
    x, w = Value(_t(8), "x"), Value(_t(8), "w")
    y = _op("dot_general", [x, w], 64)  # not recomputable: kept if needed
    z = _op("exp", [y.result], 64)
    v = _op("multiply", [z.result, y.result], 64)
    choice = choose_stash([y, z, v], [x, w], [y.result, z.result, v.result])
    assert choice.stash == [y.result]
    assert choice.recompute == {id(z), id(v)}


def test_a_broadcast_of_a_parameter_is_never_kept() -> None:
    p = Value(_t(4), "norm.weight")
    b = Op("broadcast_in_dim", [p], [TensorType(DType.F32, (16, 4))],
           {"shape": (16, 4), "broadcast_dimensions": (1,)})
    choice = choose_stash([b], [p], [b.result])
    assert choice.stash == [] and choice.recompute == {id(b)}


def test_a_small_result_of_a_large_input_is_kept_rather_than_the_input() -> None:
    x, w = Value(_t(8), "x"), Value(_t(8), "w")
    big = _op("dot_general", [x, w], 1024)
    small = _op("reduce", [big.result], 4)
    choice = choose_stash([big, small], [x, w], [small.result])
    assert choice.stash == [small.result] and choice.recompute == set()


def _recoverable(ops: list[Op], free: set[int], kept: set[int], v: Value) -> bool:
    if id(v) in free or id(v) in kept:
        return True
    op = v.owner
    return op is not None and recomputable(op) and all(
        _recoverable(ops, free, kept, u) for u in op.operands)


@pytest.mark.parametrize("seed", range(12))
def test_the_cut_is_as_small_as_any_valid_stash(seed: int) -> None:
    rng = np.random.default_rng(seed)
    free = [Value(_t(int(rng.integers(1, 50))), f"p{i}") for i in range(2)]
    values = list(free)
    ops = []
    for _ in range(7):
        kind = rng.choice(["dot_general", "exp", "add", "broadcast_in_dim"])
        args = [values[int(i)] for i in rng.choice(len(values), size=2 if kind in (
            "dot_general", "add") else 1)]
        ops.append(_op(str(kind), args, int(rng.integers(1, 100))))
        values.append(ops[-1].result)
    reads = [ops[int(i)].result for i in sorted(set(rng.choice(len(ops), size=3)))]
    choice = choose_stash(ops, free, reads)
    free_ids = {id(v) for v in free}
    kept = {id(v) for v in choice.stash}
    assert all(_recoverable(ops, free_ids, kept, v) for v in reads)
    best = min(
        sum(v.type.nbytes for v in subset)
        for n in range(len(ops) + 1) for subset in itertools.combinations(
            [op.result for op in ops], n)
        if all(_recoverable(ops, free_ids, {id(v) for v in subset}, r) for r in reads))
    assert sum(v.type.nbytes for v in choice.stash) == best
