"""Pipeline stages: the forward of the first stages, forward_backward of the last and the
backward of the others (reading the stash their forward returned), activations and their
gradients handed between them, give the loss and gradients of one stage holding the whole
model (with and without TP + SP, whole layers or cuts inside a layer)."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.nxd.models.decoder import StagePlan
from nxcc.nxd.models.decoder.config import PIECES, PIECES_PER_LAYER
from tests.nxd.models.decoder.helpers import (
    MIX_IDS,
    MIXES,
    batch,
    gather_pipeline_grads,
    gpt,
    llama,
    random_weights,
    run_tp,
    shards,
    single_stage,
)


def _stage(first: int, last: int, layers: int, **kw) -> StagePlan:
    """Pieces [first, last) (PIECES_PER_LAYER per layer, see `PIECES`)."""
    return StagePlan(first_piece=first, last_piece=last, has_embedding=first == 0,
                     has_head=last == PIECES_PER_LAYER * layers, micro_batch=2, seq_length=8,
                     **kw)


L, MLP = PIECES_PER_LAYER, PIECES.index("mlp.0")


@pytest.mark.parametrize("family,tp,sp,recompute,cuts", [
    ("llama", 1, False, "none", (L, 2 * L)), ("llama", 2, True, "full", (L, 2 * L)),
    ("llama", 2, False, "selective", (L, 2 * L)), ("llama", 1, False, "none", (L + MLP, 2 * L)),
    ("llama", 2, True, "full", (MLP, 2 * L + MLP)),
    # inside the q/k/v projection, between it and the core, after the core
    ("llama", 1, False, "none", (2, L + 3)), ("llama", 2, True, "selective", (4, 2 * L + 5)),
    # inside the MLP (its weights split by columns), and a stage of one piece
    ("llama", 2, True, "none", (MLP + 2, L + MLP + 1)),
    ("llama", 1, False, "full", (L + 4, L + 5)), ("llama", 2, False, "full", (MLP + 3, L + 1)),
    # GPT: the q/k/v and up biases split with their columns, the down bias at the last chunk
    ("gpt", 2, True, "none", (1, L + MLP + 2)), ("gpt", 1, False, "full", (MLP + 1, L + 2)),
    # key/value heads replicated over TP (kv_replicator 2): their gradient's all-reduce on
    # the part of the q/k/v columns a stage holds
    ("llama_kv", 4, True, "none", (1, L + 3)), ("llama_kv", 4, False, "full", (3, 2 * L + 2)),
    # mixed parts: the SwiGLU's gate/up bias split with its columns inside the MLP
    ("learned_rmsnorm_swiglu", 2, True, "none", (MLP + 2, L + MLP + 1)),
    ("rope_layernorm_gelu", 2, False, "full", (1, L + MLP + 2))])
def test_three_stages_match_one(family: str, tp: int, sp: bool, recompute: str,
                                cuts: tuple[int, int]) -> None:
    makers = {"gpt": gpt, "llama": llama, "llama_kv": llama,
              **dict(zip(MIX_IDS, MIXES, strict=True))}
    cfg = makers[family](layers=3)
    full = random_weights(cfg, 8)
    tokens, labels = batch(cfg, 2, 8)
    loss1, count1, grads1 = single_stage(cfg, full, tokens, labels)
    kw = {"tp_size": tp, "sequence_parallel": sp, "recompute": recompute,
          "kv_replicator": 2 if family == "llama_kv" else 1}
    bounds = [0, *cuts, 3 * L]
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
    grads = gather_pipeline_grads([(first, 0, plans[0]), (mid, 1, plans[1]),
                                   (last, 3, plans[2])], cfg)
    assert grads.keys() == grads1.keys()
    for name, g in grads1.items():
        np.testing.assert_allclose(grads[name], g, rtol=0,
                                   atol=2e-5 * float(np.abs(g).max()) + 1e-7, err_msg=name)
