"""Initial weights and their tensor-parallel slices."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from nxcc.nxd.models.decoder import (
    StagePlan,
    init_full_weights,
    model_specs,
    owned_masks,
    parameter_count,
    shard_weights,
    unshard_weights,
)
from tests.nxd.models.decoder.helpers import gpt, llama


def test_initial_weights_are_drawn_from_the_seed() -> None:
    cfg = llama()
    a, b, c = init_full_weights(cfg, 3), init_full_weights(cfg, 3), init_full_weights(cfg, 4)
    assert list(a) == [s.name for s in model_specs(cfg)]
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["head"], c["head"])
    assert a["layers.1.attn.qkv"].dtype == np.float32
    assert np.all(a["final_norm.weight"] == 1.0)
    assert abs(float(a["embed.tokens"].std()) - 0.02) < 0.004
    # residual projections scaled by 1 / sqrt(2 layers)
    assert float(a["layers.0.mlp.down"].std()) < 0.015


@pytest.mark.parametrize("make,tp,rep", [(llama, 2, 1), (llama, 4, 2), (gpt, 4, 1)])
def test_slices_put_back_together(make, tp: int, rep: int) -> None:
    cfg = make()
    full = init_full_weights(cfg, 0)
    plan = StagePlan(tp_size=tp, kv_replicator=rep, last_layer=cfg.num_layers)
    parts = [shard_weights(full, cfg, StagePlan(tp_rank=r, tp_size=tp, kv_replicator=rep,
                                                last_layer=cfg.num_layers)) for r in range(tp)]
    back = unshard_weights(parts, cfg, plan)
    assert back.keys() == full.keys()
    assert all(np.array_equal(back[k], full[k]) for k in full)


def test_rank_slices_of_grouped_query_attention() -> None:
    cfg = llama()  # 4 heads of 4, 2 key/value heads
    full = init_full_weights(cfg, 0)
    qkv = full["layers.0.attn.qkv"]  # [16, q 16 | k 8 | v 8]
    plan = StagePlan(tp_rank=3, tp_size=4, kv_replicator=2, last_layer=1)
    mine = shard_weights(full, cfg, plan)["layers.0.attn.qkv"]
    # rank 3: query head 3, and a copy of key/value head 1 (held by ranks 2 and 3)
    np.testing.assert_array_equal(mine, np.concatenate(
        [qkv[:, 12:16], qkv[:, 16 + 4:16 + 8], qkv[:, 24 + 4:24 + 8]], axis=1))
    head = shard_weights(full, cfg, plan)["head"]
    np.testing.assert_array_equal(head, full["head"][:, 24:32])


@pytest.mark.parametrize("make,tp,rep", [(llama, 4, 2), (gpt, 2, 1)])
def test_owned_masks_count_every_entry_once(make, tp: int, rep: int) -> None:
    cfg = make()
    full = init_full_weights(cfg, 1)
    total = sum(float((w.astype(np.float64) ** 2).sum()) for w in full.values())
    counted = 0.0
    for r in range(tp):
        plan = StagePlan(tp_rank=r, tp_size=tp, kv_replicator=rep, last_layer=cfg.num_layers)
        mine, masks = shard_weights(full, cfg, plan), owned_masks(cfg, plan)
        for name, w in mine.items():
            assert masks[name].shape == w.shape
            counted += float((w.astype(np.float64) ** 2 * masks[name]).sum())
    assert counted == pytest.approx(total, rel=1e-12)


def test_parameter_count_is_model_specs_counted_without_listing_the_layers() -> None:
    for cfg in (gpt(), llama(), replace(llama(), tie_embeddings=True)):
        assert parameter_count(cfg) == sum(math.prod(s.shape) for s in model_specs(cfg))
    huge = replace(gpt(), num_layers=2**64)  # a hostile file's: counted, never listed
    assert parameter_count(huge) == parameter_count(gpt()) + (2**64 - gpt().num_layers) * (
        parameter_count(replace(gpt(), num_layers=2)) - parameter_count(replace(gpt(), num_layers=1)))
