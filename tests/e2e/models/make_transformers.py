"""Regenerate the transformer and LSTM ONNX test models in tests/e2e/models/transformers/.

Needs PyTorch, onnx, onnxruntime and onnxscript (the dynamo exporter); the test suite
does not: the ``.onnx`` files and their expected outputs (``expected.npz``) are committed.

    /work/torchvenv/bin/python tests/e2e/models/make_transformers.py [NAME ...]

With names, only those models are exported again (their entries in ``expected.npz`` are
replaced, the others kept). Three small models (a few hundred KB at most), each exported
with the TorchScript exporter at opsets 14 and 17 and with the dynamo exporter at opset 18,
and one larger GPT:

- ``bert``: a BERT-style encoder: word, position and token-type embeddings, LayerNorm, two
  post-norm layers of 2-head self-attention with the padding mask (``attention_mask``,
  1 = keep) as an additive bias, an exact (erf) GELU feed-forward, and a tanh pooler on
  the first token. Inputs ``input_ids``, ``attention_mask`` (int64 [2, 8]); outputs
  ``last_hidden_state`` [2, 8, 32] and ``pooled`` [2, 32].
- ``gpt``: a GPT-style decoder: token and position embeddings, two pre-norm layers of
  causal 2-head self-attention (a lower-triangular mask) and a tanh-GELU MLP, a final
  LayerNorm and a head tied to the token embedding. Input ``input_ids`` (int64 [2, 8]);
  output ``logits`` [2, 8, 64].
- ``gpt64``: the same decoder at a realistic-ish small size for the ``-lnc 2`` plan
  (issue 14's case): hidden 64, 4 heads, 2 layers, vocabulary 128. Input ``input_ids``
  (int64 [2, 16]); output ``logits`` [2, 16, 128]. TorchScript at opset 17 and dynamo at
  opset 18 only.
- ``lstm``: an LSTM tagger: embedding, a 2-layer bidirectional LSTM, a linear layer to 5
  tags and log-softmax. Input ``tokens`` (int64 [2, 7]); output ``tag_scores`` [2, 7, 5].

Every export is checked with ``onnx.checker`` and compared with PyTorch through
onnxruntime; an export the exporter cannot produce is reported and left out. The
expected outputs stored are PyTorch's, for the inputs stored with them.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

OUT_DIR = Path(__file__).resolve().parent / "transformers"
MAX_BYTES = 1000 * 1024
ATOL = 1e-4
BATCH, SEQ = 2, 8


class Attention(nn.Module):
    """Multi-head self-attention with an additive bias [B, 1, S, S] (or [1, 1, S, S])."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + bias
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, s, d))


class BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.attn = Attention(dim, heads)
        self.norm1 = nn.LayerNorm(dim, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="none"),
                                nn.Linear(4 * dim, dim))
        self.norm2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attn(x, bias))
        return self.norm2(x + self.ff(x))


class Bert(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 2, layers: int = 2,
                 max_len: int = 16) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        self.token_type = nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(dim, heads) for _ in range(layers))
        self.pool = nn.Linear(dim, dim)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        s = input_ids.shape[1]
        pos = torch.arange(s).unsqueeze(0)
        x = self.word(input_ids) + self.position(pos) + self.token_type(
            torch.zeros_like(input_ids))
        x = self.norm(x)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


class GptBlock(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), bias)
        return x + self.mlp(self.norm2(x))


class Gpt(nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, layers: int = 2,
                 max_len: int = 16) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(GptBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.token.weight  # tied
        causal = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        s = input_ids.shape[1]
        x = self.token(input_ids) + self.position(torch.arange(s).unsqueeze(0))
        keep = self.causal[:s, :s]
        bias = torch.zeros(s, s).masked_fill(~keep, float("-inf"))[None, None]
        for block in self.blocks:
            x = block(x, bias)
        return self.head(self.norm(x))


class Gpt64(Gpt):
    def __init__(self) -> None:
        super().__init__(vocab=128, dim=64, heads=4, layers=2, max_len=16)


class LstmTagger(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, hidden: int = 16, tags: int = 5
                 ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.out(h), dim=-1)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    exports: tuple[str, ...] = ("ts14", "ts17", "dyn18")


def _inputs() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    ids = rng.integers(1, 100, (BATCH, SEQ)).astype(np.int64)
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, 5:] = 0  # the second sequence is padded
    return {
        "bert": {"input_ids": ids, "attention_mask": mask},
        "gpt": {"input_ids": rng.integers(0, 64, (BATCH, SEQ)).astype(np.int64)},
        "lstm": {"tokens": rng.integers(0, 50, (BATCH, 7)).astype(np.int64)},
        "gpt64": {"input_ids": rng.integers(0, 128, (BATCH, 16)).astype(np.int64)},
    }


def _seeded(cls: type[nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return cls().eval()

    return build


INPUTS = _inputs()
MODELS = [
    ModelSpec("bert", _seeded(Bert), INPUTS["bert"], ["last_hidden_state", "pooled"]),
    ModelSpec("gpt", _seeded(Gpt), INPUTS["gpt"], ["logits"]),
    ModelSpec("lstm", _seeded(LstmTagger), INPUTS["lstm"], ["tag_scores"]),
    ModelSpec("gpt64", _seeded(Gpt64), INPUTS["gpt64"], ["logits"], ("ts17", "dyn18")),
]
EXPORTS = [("ts14", 14, False), ("ts17", 17, False), ("dyn18", 18, True)]


def export(spec: ModelSpec, opset: int, dynamo: bool, path: Path) -> None:
    model = spec.build()
    args = tuple(torch.from_numpy(v) for v in spec.inputs.values())
    names = list(spec.inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(model, args, dynamo=True, opset_version=opset,
                                        input_names=names, output_names=spec.outputs,
                                        external_data=False)
            assert program is not None
            program.save(str(path), external_data=False)
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset,
                              input_names=names, output_names=spec.outputs)
    proto = onnx.load(str(path), load_external_data=True)
    onnx.save(proto, str(path), save_as_external_data=False)
    stray = path.with_name(path.name + ".data")
    if stray.exists():
        stray.unlink()


def check(spec: ModelSpec, path: Path, want: list[np.ndarray]) -> str:
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name}: {size} bytes"
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, spec.inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=ATOL, rtol=1e-4)
    ops = sorted({n.op_type for n in proto.graph.node})
    return f"{path.name}: {size} bytes, ops {', '.join(ops)}"


def main(names: list[str]) -> None:
    OUT_DIR.mkdir(exist_ok=True)
    unknown = set(names) - {spec.name for spec in MODELS}
    if unknown:
        raise SystemExit(f"unknown model(s): {', '.join(sorted(unknown))}")
    chosen = [spec for spec in MODELS if not names or spec.name in names]
    expected: dict[str, np.ndarray] = {}
    stored = OUT_DIR / "expected.npz"
    if names and stored.exists():
        kept = {spec.name for spec in MODELS} - set(names)
        expected = {k: v for k, v in np.load(stored).items() if k.split("/")[0] in kept}
    for spec in chosen:
        with torch.no_grad():
            out = spec.build()(*(torch.from_numpy(v) for v in spec.inputs.values()))
        outs = [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
        for k, v in spec.inputs.items():
            expected[f"{spec.name}/in/{k}"] = v
        for k, v in zip(spec.outputs, outs, strict=True):
            expected[f"{spec.name}/out/{k}"] = v
        for tag, opset, dynamo in EXPORTS:
            if tag not in spec.exports:
                continue
            path = OUT_DIR / f"{spec.name}_{tag}.onnx"
            try:
                export(spec, opset, dynamo, path)
                print(check(spec, path, outs))
            except Exception as exc:  # noqa: BLE001 - report and leave the export out
                print(f"{path.name}: not exported ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''})")
                if path.exists():
                    path.unlink()
    np.savez(stored, **expected)


if __name__ == "__main__":
    main(sys.argv[1:])
