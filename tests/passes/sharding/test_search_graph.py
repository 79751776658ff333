"""The numbered graph the sharding search prices choices on: its memos of each op's
propagation and planning step hold across choices, so pricing many choices on one graph
gives exactly what a fresh graph (no memo) gives for each, and `plan_function` agrees."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.compiler.onnx import import_onnx
from nxcc.ir.core import Module
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import pipeline
from nxcc.passes.sharding.partitioning import plan_function, plan_graph
from nxcc.passes.sharding.propagation import propagate_graph
from nxcc.passes.sharding.search import ANCHORS, seeds_for, strategy_table
from nxcc.passes.sharding.search_graph import SearchGraph
from tests.passes.sharding.models import gpt, mlp

N = 2


def optimised(model) -> Module:  # noqa: ANN001  (an onnx ModelProto)
    module = import_onnx(model)
    PassManager(pipeline(2)).run(module)
    return module


@pytest.mark.parametrize("model", [gpt(layers=1), mlp(batch=8)], ids=["gpt", "mlp"])
def test_memoised_pricing_matches_fresh_pricing(model) -> None:  # noqa: ANN001
    module = optimised(model)
    fn = module.entry_function
    table = strategy_table(fn, N, module)
    shared = SearchGraph(fn, table, N)
    anchors = [op for op in fn.body if op.opdef in ANCHORS]
    assert anchors
    rng = np.random.default_rng(0)
    for _ in range(40):
        chosen = {}
        for op in anchors:
            options = table(op)
            if rng.random() < 0.8:
                chosen[id(op)] = options[rng.integers(len(options))]
        seeds = seeds_for(anchors, chosen, {})
        fresh = SearchGraph(fn, table, N)
        hints = propagate_graph(shared, shared.to_list(seeds))
        assert shared.to_dict(hints) == fresh.to_dict(propagate_graph(fresh, fresh.to_list(seeds)))
        cost = plan_graph(shared, hints).cost
        assert cost == plan_graph(fresh, fresh.to_list(shared.to_dict(hints))).cost
        whole = plan_function(fn, shared.to_dict(hints), N, table)
        assert whole.cost == cost
        recorded = plan_graph(shared, hints, record=True)
        assert [p.strategy for p in recorded.ops] == [p.strategy for p in whole.ops]
        assert recorded.shardings == whole.shardings
