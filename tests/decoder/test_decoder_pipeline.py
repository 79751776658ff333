"""Pipeline stages: the forward of the first stages, forward_backward of the last and the
backward of the others (reading the stash their forward returned), activations and their
gradients handed between them, give the loss and gradients of one stage holding the whole
model (with and without TP + SP, whole layers or cuts inside a layer)."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.compiler.decoder import StagePlan
from tests.decoder.helpers import (
    batch,
    gather_grads,
    llama,
    random_weights,
    run_tp,
    shards,
    single_stage,
)


def _stage(first: int, last: int, layers: int, **kw) -> StagePlan:
    """Blocks [first, last) (block 2i: layer i's attention, 2i + 1: its MLP)."""
    return StagePlan(first_block=first, last_block=last, has_embedding=first == 0,
                     has_head=last == 2 * layers, micro_batch=2, seq_length=8, **kw)


@pytest.mark.parametrize("tp,sp,recompute,cuts", [
    (1, False, "none", (2, 4)), (2, True, "full", (2, 4)), (2, False, "selective", (2, 4)),
    (1, False, "none", (3, 4)), (2, True, "full", (1, 5))])
def test_three_stages_match_one(tp: int, sp: bool, recompute: str,
                                cuts: tuple[int, int]) -> None:
    cfg = llama(layers=3)
    full = random_weights(cfg, 8)
    tokens, labels = batch(cfg, 2, 8)
    loss1, count1, grads1 = single_stage(cfg, full, tokens, labels)
    kw = {"tp_size": tp, "sequence_parallel": sp, "recompute": recompute}
    bounds = [0, *cuts, 6]
    plans = [_stage(bounds[i], bounds[i + 1], 3, **kw) for i in range(3)]
    weights = [shards(full, cfg, p) for p in plans]
    # forwards
    x = [[*weights[0][r], tokens] for r in range(tp)]
    out0 = run_tp(cfg, plans[0], "forward", x)
    x1 = [[*weights[1][r], out0[r][0]] for r in range(tp)]
    out1 = run_tp(cfg, plans[1], "forward", x1)
    # last stage, then backwards
    last = run_tp(cfg, plans[2], "forward_backward",
                  [[*weights[2][r], out1[r][0], labels] for r in range(tp)])
    assert float(last[0][1]) == count1
    assert float(last[0][0]) == pytest.approx(loss1, rel=1e-5)
    mid = run_tp(cfg, plans[1], "backward", [[*x1[r], *out1[r][1:], last[r][2]]
                                             for r in range(tp)])
    first = run_tp(cfg, plans[0], "backward", [[*x[r], *out0[r][1:], mid[r][0]]
                                               for r in range(tp)])
    grads = {**gather_grads(first, 0, cfg, plans[0]), **gather_grads(mid, 1, cfg, plans[1]),
             **gather_grads(last, 3, cfg, plans[2])}
    assert grads.keys() == grads1.keys()
    for name, g in grads1.items():
        np.testing.assert_allclose(grads[name], g, rtol=0,
                                   atol=2e-5 * float(np.abs(g).max()) + 1e-7, err_msg=name)
