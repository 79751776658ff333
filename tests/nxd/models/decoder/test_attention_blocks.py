"""The decoder's attention by blocks of queries (`attention.query_blocks`): the blocks
themselves, and the loss and gradients of models whose sequence is cut into blocks (the
block made small) against the numpy reference and finite differences, as the whole
attention is in test_decoder_reference.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nxcc.ir.printer import print_module
from nxcc.nxd.models.decoder import StagePlan, attention, build_stage, program, trace
from nxcc.nxd.models.decoder.attention import query_blocks
from tests.nxd.models.decoder.helpers import (
    assert_gradients_match_finite_differences,
    batch,
    gpt,
    llama,
    random_weights,
    reference_loss,
    single_stage,
    windowed,
)


def test_blocks_of_queries_over_the_keys_they_see() -> None:
    block = attention.QUERY_BLOCK
    assert query_blocks(2 * block - 1, None) == [(0, 2 * block - 1, 0, 2 * block - 1)]
    assert query_blocks(2 * block, None) == [(0, block, 0, block),
                                             (block, 2 * block, 0, 2 * block)]
    # the last block takes the rest; a window starts each block's keys later
    assert query_blocks(3 * block + 5, block // 2) == [
        (0, block, 0, block), (block, 2 * block, block // 2 + 1, 2 * block),
        (2 * block, 3 * block + 5, 3 * block // 2 + 1, 3 * block + 5)]


@pytest.fixture(autouse=True)
def _fresh_models():
    """Built models are cached by configuration (`trace._traced`): none made with a small
    block outlives its test."""
    trace._traced.cache_clear()
    yield
    trace._traced.cache_clear()


def _blocks_of(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    monkeypatch.setattr(attention, "QUERY_BLOCK", size)
    trace._traced.cache_clear()


CASES = [gpt, llama, windowed(gpt), windowed(llama, 4)]
IDS = ["gpt", "llama", "gpt_window3", "llama_window4"]


@pytest.mark.parametrize("make", CASES, ids=IDS)
def test_blocked_loss_matches_numpy(make, monkeypatch: pytest.MonkeyPatch) -> None:
    _blocks_of(monkeypatch, 3)  # 8 positions: blocks of queries 0-2, 3-5, 6-7
    cfg = make(dtype="float64")
    full = random_weights(cfg, 0)
    tokens, labels = batch(cfg, 2, 8)
    loss, count, _ = single_stage(cfg, full, tokens, labels)
    want, want_count = reference_loss(cfg, full, tokens, labels)
    assert count == want_count
    assert loss == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("make", CASES, ids=IDS)
def test_blocked_gradients_match_finite_differences(make,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _blocks_of(monkeypatch, 2)
    cfg = make(layers=1, dtype="float64")
    full = random_weights(cfg, 3)
    tokens, labels = batch(cfg, 2, 6)
    _, _, grads = single_stage(cfg, full, tokens, labels)
    assert_gradients_match_finite_differences(cfg, full, tokens, labels, grads)


def test_float32_blocked_matches_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """In float32 the blocks give the whole attention's loss and gradients to rounding."""
    cfg = gpt()
    full = random_weights(cfg, 0)
    tokens, labels = batch(cfg, 2, 8)
    whole = single_stage(cfg, full, tokens, labels)
    _blocks_of(monkeypatch, 3)
    blocked = single_stage(cfg, full, tokens, labels)
    assert blocked[0] == pytest.approx(whole[0], rel=1e-6)
    for name, g in whole[2].items():
        np.testing.assert_allclose(blocked[2][name], g, rtol=1e-4, atol=1e-6, err_msg=name)


def _scores(text: str) -> set[str]:
    """The shapes of the attention's scores (5-d results of its products) in `text`."""
    return set(re.findall(r"= dot_general\(.*: f32\[(\d+,\d+,\d+,\d+,\d+)\]", text))


def test_blocks_shrink_the_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut into blocks, the scores of each block span the keys it sees, never the whole
    sequence's for every query."""
    plan = StagePlan(last_layer=1, micro_batch=2, seq_length=8)
    whole = print_module(program(build_stage(gpt(layers=1), plan), "forward_backward"))
    _blocks_of(monkeypatch, 4)
    blocked = print_module(program(build_stage(gpt(layers=1), plan), "forward_backward"))
    assert "2,4,1,8,8" in _scores(whole)
    assert {"2,4,1,4,4", "2,4,1,4,8"} <= _scores(blocked)
    assert "2,4,1,8,8" not in _scores(blocked)
