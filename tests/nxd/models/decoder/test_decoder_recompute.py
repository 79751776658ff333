"""Activation recomputation: none, selective and full give the same gradients, and the
memory plan's peak activation bytes fall in that order (full at least 2x below none on a
4-layer model), before and after the -O2 pipeline (CSE must not merge the recomputation
back into the forward)."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.backend.program.memory_plan import peak_activation_bytes
from nxcc.ir.interpreter import IRContext
from nxcc.nxd.models.decoder import DecoderConfig, StagePlan, build_stage, program
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import pipeline
from tests.nxd.models.decoder.helpers import batch, gpt, random_weights, shards, single_stage

MODES = ("none", "selective", "full")
CFG = DecoderConfig("llama", num_layers=4, hidden_size=32, num_attention_heads=4,
                    num_kv_heads=2, ffn_hidden_size=64, vocab_size=64,
                    max_position_embeddings=64)


def _program(mode: str, optimize: bool, **kw):
    plan = StagePlan(last_layer=4, micro_batch=2, seq_length=64, recompute=mode, **kw)
    p = program(build_stage(CFG, plan), "forward_backward")
    if optimize:
        PassManager(pipeline(2)).run(p)
    return plan, p


@pytest.mark.parametrize("optimize", [False, True], ids=["as-built", "O2"])
def test_peak_activation_bytes_ordered(optimize: bool) -> None:
    peak = {m: peak_activation_bytes(_program(m, optimize)[1], "forward_backward")
            for m in MODES}
    assert peak["none"] > peak["selective"] > peak["full"]
    assert peak["none"] >= 2 * peak["full"], peak


def test_optimized_full_recomputation_keeps_its_barriers_and_numbers() -> None:
    tokens, labels = batch(CFG, 2, 64)
    full = random_weights(CFG, 4)
    got = {}
    for mode in ("none", "full"):
        plan, p = _program(mode, True)
        barriers = sum(op.opcode == "optimization_barrier" for op in p.entry_function.body)
        assert barriers == (4 if mode == "full" else 0)
        got[mode] = IRContext(p).call("forward_backward",
                                      [*shards(full, CFG, plan)[0], tokens, labels])
    for a, b in zip(got["none"], got["full"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("family", ["gpt", "llama"])
def test_same_gradients_in_every_mode(family: str) -> None:
    cfg = gpt() if family == "gpt" else CFG
    full = random_weights(cfg, 2)
    tokens, labels = batch(cfg, 2, 16)
    base = single_stage(cfg, full, tokens, labels)
    for mode in ("selective", "full"):
        loss, count, grads = single_stage(cfg, full, tokens, labels, recompute=mode)
        assert (loss, count) == base[:2]
        for name, g in base[2].items():
            np.testing.assert_allclose(grads[name], g, rtol=1e-6, atol=1e-9, err_msg=name)


def test_sequence_parallel_lowers_per_rank_peak() -> None:
    peaks = [peak_activation_bytes(_program("none", False, tp_size=2, sequence_parallel=sp)[1],
                                   "forward_backward") for sp in (False, True)]
    assert peaks[1] < peaks[0]
