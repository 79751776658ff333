"""Tensor and sequence parallelism: the ranks of a TP group, run as threads, give the loss
and (gathered) gradients of one rank, to float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from tests.nxd.models.decoder.helpers import (
    MIX_IDS,
    MIXES,
    batch,
    gpt,
    gpt_tied,
    llama,
    random_weights,
    single_stage,
)

CASES = [  # (model, tp, kv_replicator, sequence parallel)
    ("llama", 2, 1, False), ("llama", 2, 1, True), ("llama", 4, 2, False),
    ("llama", 4, 2, True), ("gpt", 2, 1, False), ("gpt", 2, 1, True), ("gpt_tied", 2, 1, True),
    ("rope_layernorm_gelu", 2, 1, True), ("learned_rmsnorm_swiglu", 2, 1, False),
    ("learned_rmsnorm_swiglu", 4, 2, True), ("gpt_without_biases", 2, 1, False),
]


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for name, w in want.items():
        scale = float(np.abs(w).max())
        np.testing.assert_allclose(got[name], w, rtol=0, atol=2e-5 * scale + 1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("family,tp,rep,sp", CASES)
def test_tp_matches_one_rank(family: str, tp: int, rep: int, sp: bool) -> None:
    cfg = {"llama": llama, "gpt": gpt, "gpt_tied": gpt_tied,
           **dict(zip(MIX_IDS, MIXES, strict=True))}[family]()
    full = random_weights(cfg, 11)
    tokens, labels = batch(cfg, 2, 8)
    loss1, count1, grads1 = single_stage(cfg, full, tokens, labels)
    loss, count, grads = single_stage(cfg, full, tokens, labels, tp_size=tp,
                                      kv_replicator=rep, sequence_parallel=sp)
    assert count == count1
    assert loss == pytest.approx(loss1, rel=1e-5)
    _close(grads, grads1)
