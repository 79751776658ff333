"""Regenerate the training references in tests/driver/train/data/ (needs PyTorch; the tests do
not: the ONNX exports, the batches and PyTorch's figures are committed).

    /work/torchvenv/bin/python tests/driver/train/make_reference.py

Two models, each exported once with its initial weights (TorchScript exporter, opset 17,
no constant folding, so every parameter stays an initializer under its PyTorch name and the
tied GPT head reads the token embedding itself), then trained by PyTorch on one fixed batch:

- ``gpt``: the GPT-style decoder of tests/e2e/models/make_transformers.py (2 layers, vocab 64,
  dim 32, 2 heads, tied head), its LayerNorm weights and biases drawn at random so that no
  two parameters are equal (the exporter would merge equal initializers). 30 steps of
  torch.optim.AdamW(lr=1e-3, weight_decay=0.01) on cross-entropy over every next-token
  position of a [2, 8] batch, two positions labelled -100 (ignored).
- ``lstm``: the LSTM tagger of tests/e2e/models/make_transformers.py (embedding, 2-layer
  bidirectional LSTM, linear, log-softmax): 30 steps of AdamW(lr=1e-2, weight_decay=0.01)
  on cross-entropy over the log-probabilities of a [2, 7] batch (the LSTM's time loop is a
  ``while`` whose gradient is two more loops).
- ``cnn``: conv 3x3 (3 -> 8, padding 1) -> batch norm (training mode) -> ReLU ->
  max-pool 2 -> linear (512 -> 10), exported in training mode; 30 steps of
  torch.optim.SGD(lr=0.002, momentum=0.9) on cross-entropy over an [8, 3, 16, 16] batch.

Stored per model: ``NAME.onnx``, ``NAME_batch.npz`` (the model's input and ``labels``) and
``NAME_reference.npz`` (``losses`` [30] and the parameters after the last step under their
initializer names).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
sys.path.insert(0, str(ROOT))
from tests.e2e.models.make_transformers import Gpt, LstmTagger  # noqa: E402

OUT = Path(__file__).resolve().parent / "data"
STEPS = 30


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


def export(model: nn.Module, example: torch.Tensor, name: str, input_name: str,
           output_name: str, training: bool) -> list[str]:
    path = OUT / f"{name}.onnx"
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, (example,), str(path), input_names=[input_name],
                      output_names=[output_name], opset_version=17, dynamo=False,
                      do_constant_folding=False, training=mode)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    return [t.name for t in proto.graph.initializer]


def train(model: nn.Module, x: torch.Tensor, labels: torch.Tensor,
          optimizer: torch.optim.Optimizer) -> list[float]:
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               ignore_index=-100)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def save(name: str, model: nn.Module, initializers: list[str], batch: dict[str, np.ndarray],
         losses: list[float]) -> None:
    params = {k: v.detach().numpy() for k, v in model.named_parameters()}
    final = {k: params[k] for k in initializers if k in params}
    np.savez(OUT / f"{name}_batch.npz", **batch)
    np.savez(OUT / f"{name}_reference.npz", losses=np.array(losses, np.float32), **final)
    print(f"{name}: losses {losses[0]:.6f} -> {losses[-1]:.6f}; "
          f"{len(final)} parameters stored: {sorted(final)}")


def make_gpt() -> None:
    torch.manual_seed(0)
    model = Gpt()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    ids = torch.randint(0, 64, (2, 8))
    labels = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)
    labels[0, 3] = -100
    model.train()
    inits = export(model, ids, "gpt", "input_ids", "logits", training=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses = train(model, ids, labels, opt)
    save("gpt", model, inits, {"input_ids": ids.numpy(), "labels": labels.numpy()}, losses)


def make_lstm() -> None:
    torch.manual_seed(2)
    model = LstmTagger()
    tokens = torch.randint(0, 50, (2, 7))
    labels = torch.randint(0, 5, (2, 7))
    labels[1, 6] = -100
    model.train()
    inits = export(model, tokens, "lstm", "tokens", "tag_scores", training=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = train(model, tokens, labels, opt)
    save("lstm", model, inits, {"tokens": tokens.numpy(), "labels": labels.numpy()}, losses)


def make_cnn() -> None:
    torch.manual_seed(1)
    model = SmallCnn()
    x = torch.randn(8, 3, 16, 16)
    labels = torch.tensor([3, 7, 0, 9, 1, 3, 5, 2])
    model.train()
    inits = export(model, x, "cnn", "images", "logits", training=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.002, momentum=0.9)
    losses = train(model, x, labels, opt)
    save("cnn", model, inits, {"images": x.numpy(), "labels": labels.numpy()}, losses)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    make_gpt()
    make_lstm()
    make_cnn()
