"""The single-stage TP=1 decoder against a numpy reference: the loss, and the gradients
against central finite differences (float64); GPT also with its head tied to the embedding."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nxcc.nxd.models.decoder import init_full_weights
from tests.nxd.models.decoder.helpers import (
    MIX_IDS,
    MIXES,
    assert_gradients_match_finite_differences,
    batch,
    gpt,
    gpt_tied,
    llama,
    random_weights,
    reference_loss,
    single_stage,
    windowed,
)

CASES = [gpt, llama, gpt_tied, *MIXES, windowed(llama), windowed(gpt)]
IDS = ["gpt", "llama", "gpt_tied", *MIX_IDS, "llama_window3", "gpt_window3"]


@pytest.mark.parametrize("make", CASES, ids=IDS)
def test_loss_matches_numpy(make) -> None:
    cfg = make(dtype="float64")
    full = random_weights(cfg, 0)
    tokens, labels = batch(cfg, 2, 8)
    loss, count, _ = single_stage(cfg, full, tokens, labels)
    want, want_count = reference_loss(cfg, full, tokens, labels)
    assert count == want_count == 15
    assert loss == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("make", [gpt, llama, gpt_tied], ids=["gpt", "llama", "gpt_tied"])
def test_float32_loss_from_initial_weights(make) -> None:
    cfg = make()
    full = init_full_weights(cfg, 7)
    tokens, labels = batch(cfg, 2, 8)
    loss, _, _ = single_stage(cfg, full, tokens, labels)
    want, _ = reference_loss(cfg, full, tokens, labels)
    assert loss == pytest.approx(want, rel=1e-5)
    # small initial weights: about log(vocab) per token
    assert abs(loss / 15 - np.log(cfg.vocab_size)) < 0.1


@pytest.mark.parametrize("make", CASES, ids=IDS)
def test_gradients_match_finite_differences(make) -> None:
    cfg = make(layers=1, dtype="float64")
    full = random_weights(cfg, 3)
    tokens, labels = batch(cfg, 2, 6)
    _, _, grads = single_stage(cfg, full, tokens, labels)
    assert_gradients_match_finite_differences(cfg, full, tokens, labels, grads)


@pytest.mark.parametrize("make", [llama, gpt], ids=["llama", "gpt"])
def test_a_sliding_window_narrower_than_the_sequence_changes_the_loss(make) -> None:
    """(Its loss and gradients against numpy: the windowed cases of the tests above.) A
    window of at least the sequence is plain causal attention."""
    cfg = make(dtype="float64")
    full = random_weights(cfg, 0)
    tokens, labels = batch(cfg, 2, 8)
    causal = single_stage(cfg, full, tokens, labels)[0]
    narrow = single_stage(replace(cfg, sliding_window=3), full, tokens, labels)[0]
    wide = single_stage(replace(cfg, sliding_window=8), full, tokens, labels)[0]
    assert abs(narrow - causal) > 1e-3 and wide == pytest.approx(causal, rel=1e-15)
