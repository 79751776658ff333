"""The single-stage TP=1 decoder against a numpy reference: the loss, and the gradients
against central finite differences (float64); GPT also with its head tied to the embedding."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.compiler.decoder import init_full_weights
from tests.decoder.helpers import (
    batch,
    gpt,
    gpt_tied,
    llama,
    random_weights,
    reference_loss,
    single_stage,
)


@pytest.mark.parametrize("make", [gpt, llama, gpt_tied], ids=["gpt", "llama", "gpt_tied"])
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


@pytest.mark.parametrize("make", [gpt, llama, gpt_tied], ids=["gpt", "llama", "gpt_tied"])
def test_gradients_match_finite_differences(make) -> None:
    cfg = make(layers=1, dtype="float64")
    full = random_weights(cfg, 3)
    tokens, labels = batch(cfg, 2, 6)
    _, _, grads = single_stage(cfg, full, tokens, labels)
    rng = np.random.default_rng(5)
    h = 1e-6
    for name, w in full.items():
        for _ in range(2):
            i = tuple(int(rng.integers(0, n)) for n in w.shape)
            plus, minus = dict(full), dict(full)
            plus[name], minus[name] = w.copy(), w.copy()
            plus[name][i] += h
            minus[name][i] -= h
            fd = (reference_loss(cfg, plus, tokens, labels)[0]
                  - reference_loss(cfg, minus, tokens, labels)[0]) / (2 * h)
            assert grads[name][i] == pytest.approx(fd, rel=1e-5, abs=1e-7), (name, i)


def _windowed_llama(**kw):
    return llama(sliding_window=3, **kw)


def _windowed_gpt(**kw):
    return gpt(sliding_window=3, **kw)


@pytest.mark.parametrize("make", [_windowed_llama, _windowed_gpt], ids=["llama", "gpt"])
def test_sliding_window_matches_numpy_and_changes_the_loss(make) -> None:
    """A window of 3 (each query sees itself and 2 keys before it) on sequences of 8."""
    cfg = make(dtype="float64")
    full = random_weights(cfg, 0)
    tokens, labels = batch(cfg, 2, 8)
    loss, _, grads = single_stage(cfg, full, tokens, labels)
    want, _ = reference_loss(cfg, full, tokens, labels)
    assert loss == pytest.approx(want, rel=1e-12)
    causal = type(cfg)(**{**cfg.__dict__, "sliding_window": None})
    assert abs(single_stage(causal, full, tokens, labels)[0] - loss) > 1e-3
    # a window at least the sequence is plain causal attention
    wide = type(cfg)(**{**cfg.__dict__, "sliding_window": 8})
    assert single_stage(wide, full, tokens, labels)[0] == pytest.approx(
        single_stage(causal, full, tokens, labels)[0], rel=1e-15)
    h, name = 1e-6, "layers.0.attn.qkv"  # the keys' and queries' weights: the window acts there
    i = (3, 5)
    plus, minus = dict(full), dict(full)
    plus[name], minus[name] = full[name].copy(), full[name].copy()
    plus[name][i] += h
    minus[name][i] -= h
    fd = (reference_loss(cfg, plus, tokens, labels)[0]
          - reference_loss(cfg, minus, tokens, labels)[0]) / (2 * h)
    assert grads[name][i] == pytest.approx(fd, rel=1e-5, abs=1e-7)
