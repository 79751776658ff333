"""The cost model's ring formulas and its use of them."""

from __future__ import annotations

import pytest

from nxcc.ir.parser import parse_module
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.cost_model import Cost, collective_traffic, rank_traffic
from nxcc.passes.sharding.partitioning import op_cost, reshard_cost, reshard_kind
from nxcc.passes.sharding.rules import strategies


@pytest.mark.parametrize(("kind", "n", "expected"), [
    ("all_reduce", 2, 1000), ("all_reduce", 4, 1500), ("all_gather", 2, 500),
    ("all_gather", 4, 750), ("reduce_scatter", 4, 750), ("all_to_all", 2, 250),
    ("collective_permute", 2, 500), ("all_reduce", 1, 0),
])
def test_ring_formulas(kind: str, n: int, expected: float) -> None:
    assert collective_traffic(kind, 1000, n) == pytest.approx(expected)


def test_rank_traffic_starts_from_one_ranks_operand() -> None:
    # all_gather of a 500-byte block on 2 ranks: the gathered tensor is 1000 bytes.
    assert rank_traffic("all_gather", 500, 2) == pytest.approx(500)
    assert rank_traffic("all_reduce", 1000, 2) == pytest.approx(1000)


def test_reshards_local_ones_are_free() -> None:
    r, s0, s1, p = (Sharding.replicated(), Sharding.split(2, 0, 2), Sharding.split(2, 1, 2),
                    Sharding.partial(2, 2))
    assert [reshard_kind(a, b) for a, b in [(r, s0), (r, p), (s0, r), (s0, s1), (s0, p),
                                             (p, r), (p, s0), (s0, s0)]] == [
        "slice", "to_partial", "all_gather", "all_to_all", "split_to_partial", "all_reduce",
        "reduce_scatter", None]
    assert reshard_cost(r, s0, 4096, 2).seconds == 0
    assert reshard_cost(p, r, 4096, 2).collective_bytes == pytest.approx(4096)
    assert reshard_cost(p, s0, 4096, 2).collective_bytes == pytest.approx(2048)


def test_costs_add_up() -> None:
    c = Cost(flops=1e6)
    c.add(Cost(weight_bytes=1e3, collective_bytes=1e2, collectives=1))
    assert c.collectives == 1 and c.seconds > 0


def test_collectives_on_an_inner_split_pay_a_relayout() -> None:
    shape = (2, 16, 64)  # [batch, seq, hidden]: 8192 bytes
    r, batch, heads, p = (Sharding.replicated(), Sharding.split(3, 0, 2),
                          Sharding.split(3, 2, 2), Sharding.partial(3, 2))
    assert reshard_cost(batch, r, 8192, 2, shape).activation_bytes == 0
    assert reshard_cost(heads, r, 8192, 2, shape).activation_bytes == pytest.approx(16384)
    assert reshard_cost(p, heads, 8192, 2, shape).activation_bytes == pytest.approx(16384)
    assert reshard_cost(batch, heads, 8192, 2, shape).activation_bytes == pytest.approx(8192)
    assert reshard_cost(p, r, 8192, 2, shape).activation_bytes == 0
    # a leading dimension of size 1 does not count as the outermost
    assert reshard_cost(Sharding.split(3, 1, 2), r, 4096, 2, (1, 16, 64)).activation_bytes == 0
    # without a shape (the bare ring formulas) nothing is added
    assert reshard_cost(heads, r, 8192, 2).activation_bytes == 0


def test_an_input_shared_by_matrix_ops_is_charged_once() -> None:
    module = parse_module("""module @m {
  func @main(%x: f32[4,8], %w: f32[8,4]) -> (f32[4,4]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,4]
    return %0
  }
}
""")
    op = module.entry_function.body[0]
    whole = strategies(op, 2, module)[0]
    assert whole.kind == "replicate"
    assert op_cost(op, whole).activation_bytes == 128 + 128
    assert op_cost(op, whole, (3, 3)).activation_bytes == pytest.approx(256 / 3)
