"""nxcc.torch.trace as torch_neuronx.trace: a CNN and a small transformer match PyTorch, the
traced module nests its inputs and outputs like the function, saves and loads with its NEFF,
and refuses inputs it was not traced for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed "
                                            "(pip install '.[torch]')")

import nxcc  # noqa: E402
import nxcc.torch  # noqa: E402
from nxcc.errors import DYNAMIC_SHAPE, UNSUPPORTED_DTYPE, NrtStatus  # noqa: E402

ARGS = "--target trn1"


class CNN(torch.nn.Module):
    """Convolutions with batch norm, pooling, a residual add and a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.conv3 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv1(x)))
        x = x + torch.nn.functional.gelu(self.conv2(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.conv3(x)).mean(dim=(2, 3))
        return torch.softmax(self.fc(x), dim=-1)


class Transformer(torch.nn.Module):
    """Token and position embeddings, two encoder layers and a vocabulary head."""

    def __init__(self, vocab: int = 50, d: int = 32) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Parameter(torch.randn(1, 16, d) * 0.1)
        layer = torch.nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions[:, :ids.shape[1]]
        return self.head(self.encoder(x))


def assert_matches(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.double().numpy(), want.detach().double().numpy(),
                               rtol=1e-4, atol=1e-6)


def test_a_cnn_matches_pytorch() -> None:
    torch.manual_seed(0)
    model = CNN().eval()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    example = torch.rand(2, 3, 16, 16)
    trace = nxcc.torch.trace(model, example, compiler_args=ARGS)
    for x in (example, torch.rand(2, 3, 16, 16)):
        assert_matches(trace(x), model(x))
    trace.close()


def test_a_transformer_matches_pytorch() -> None:
    torch.manual_seed(1)
    model = Transformer().eval()
    ids = torch.randint(0, 50, (2, 12))
    trace = nxcc.torch.trace(model, ids, compiler_args=ARGS)
    assert_matches(trace(ids), model(ids))
    other = torch.randint(0, 50, (2, 12))
    assert_matches(trace(other), model(other))
    trace.close()


def nested(pair: tuple[torch.Tensor, torch.Tensor], scale: int, options: dict) -> dict:
    x, y = pair
    return {"sum": (x + y) * scale, "parts": [x.relu(), options["mask"].logical_not()],
            "bf16": (x * 2).to(torch.bfloat16)}


def test_nested_inputs_and_outputs_save_and_load(tmp_path: Path) -> None:
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    options = {"mask": torch.tensor([True, False, True])}
    example = ((x, y), 3, options)
    trace = nxcc.torch.trace(nested, example, compiler_args=ARGS,
                             compiler_workdir=tmp_path / "work")
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["graph.neff", "model.onnx"]
    want = nested(*example)
    got = trace(*example)
    assert got.keys() == want.keys() and isinstance(got["parts"], list)
    for key in ("sum", "bf16"):
        assert_matches(got[key], want[key])
    for g, w in zip(got["parts"], want["parts"], strict=True):
        assert torch.equal(g, w)

    path = tmp_path / "nested.pt"
    nxcc.torch.save(trace, path)
    with nxcc.torch.neuron_cores_context(start_nc=5):
        loaded = nxcc.torch.load(path)
    assert loaded.neuron_cores == [5]
    again = loaded(*example)
    assert all(torch.equal(a, b) for a, b in zip(again["parts"], got["parts"], strict=True))
    assert torch.equal(again["sum"], got["sum"]) and torch.equal(again["bf16"], got["bf16"])
    assert loaded.executions == [5]
    nxcc.torch.set_neuron_cores(loaded, start_nc=6, nc_count=2)
    assert loaded.neuron_cores == [6, 7]
    nxcc.torch.set_multicore(loaded)  # a replica on every core of the process
    cores = loaded.neuron_cores
    assert len(cores) > 2 and cores == sorted(set(cores))
    for _ in range(3):
        loaded(*example)
    assert loaded.executions[-3:] == cores[:3]
    with pytest.raises(TypeError, match="nxcc.torch.save"):
        torch.save(loaded, tmp_path / "pickled.pt")
    for module in (trace, loaded):
        module.close()


def test_inputs_it_was_not_traced_for_are_refused() -> None:
    trace = nxcc.torch.trace(lambda x, k: x * k, (torch.ones(2, 3), 2), compiler_args=ARGS)
    assert torch.equal(trace(torch.ones(2, 3), 2), torch.full((2, 3), 2.0))
    cases = [((torch.ones(3, 2), 2), "input tensor 0 is float32[3, 2], but the model was "
              "traced with float32[2, 3]"),
             ((torch.ones(2, 3, dtype=torch.float64), 2), "input tensor 0 is float64[2, 3]"),
             ((torch.ones(2, 3), 3), "traced with (T, 2), called with (T, 3)"),
             ((torch.ones(2, 3),), "traced with (T, 2), called with (T,)")]
    for args, fragment in cases:
        with pytest.raises(nxcc.NrtError) as err:
            trace(*args)
        assert err.value.status == NrtStatus.EXEC_BAD_INPUT and fragment in str(err.value)
    trace.close()
    with pytest.raises(nxcc.NrtError) as err:
        trace(torch.ones(2, 3), 2)
    assert err.value.status == NrtStatus.INVALID_HANDLE


def test_what_cannot_be_traced_is_one_error() -> None:
    with pytest.raises(nxcc.CompileError) as err:
        nxcc.torch.trace(torch.nonzero, torch.ones(3), compiler_args=ARGS)
    assert err.value.code == DYNAMIC_SHAPE and "data-dependent shape" in str(err.value)
    with pytest.raises(nxcc.CompileError) as err:
        nxcc.torch.trace(lambda x: x * 2, torch.ones(2, dtype=torch.complex64))
    assert err.value.code == UNSUPPORTED_DTYPE and "complex64" in str(err.value)
    with pytest.raises(nxcc.CompileError) as err:
        nxcc.torch.trace(lambda x: x * 2, torch.ones(2), compiler_args="--target trn9")
    assert "trn9" in str(err.value)
