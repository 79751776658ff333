"""Issue 14's case end to end: a 2-layer GPT exported by either PyTorch exporter, compiled
with `-lnc 2`, gets the Megatron-LM plan (one all-reduce after each attention block and
each MLP block: 4 for 2 layers, no other collective anywhere, the embedding and the
vocabulary-split head need none), as `inspect-neff --json` shows, and computes what
onnxruntime computes.

The fixtures (hidden 64, 4 heads, sequence 16, vocabulary 128, batch 2) are made by
tests/e2e/models/make_transformers.py (`gpt64`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from tests.cli_helpers import MODELS, neuronx_cc

FIXTURES = MODELS / "transformers"
EXPECTED = np.load(FIXTURES / "expected.npz")
EXPORTS = ["gpt64_ts17", "gpt64_dyn18"]  # TorchScript exporter at opset 17, dynamo at 18
HIDDEN = [2, 16, 64]  # [batch, sequence, hidden]: what each block all-reduces


@pytest.fixture(scope="module", params=EXPORTS)
def compiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[str, Path, dict]:
    tmp = tmp_path_factory.mktemp(request.param)
    neff = tmp / "g.neff"
    env = {"NEURON_COMPILE_CACHE_URL": str(tmp / "cache")}
    result = neuronx_cc("compile", str(FIXTURES / f"{request.param}.onnx"), "--framework",
                        "ONNX", "--target", "trn2", "-lnc", "2", "-o", str(neff), env=env)
    assert result.returncode == 0, result.stderr
    shown = neuronx_cc("inspect-neff", "--json", str(neff), env=env)
    assert shown.returncode == 0, shown.stderr
    return request.param, neff, json.loads(shown.stdout)


def test_exactly_four_all_reduces_of_the_hidden_state(compiled: tuple[str, Path, dict]
                                                      ) -> None:
    _, _, info = compiled
    found = [(c["kind"], c["shape"], c["dtype"]) for c in info["collectives"]]
    assert found == [("all_reduce", HIDDEN, "f32")] * 4
    assert all(c["reduction"] == "sum" and c["replica_groups"] == [[0, 1]]
               for c in info["collectives"])
    # each all-reduce moves 2 (n-1)/n x 8 KB per rank on 2 ranks: 16 KB, 64 KB in all
    assert info["communication"] == {"collectives": 4, "bytes_per_execution": 65536.0}
    flops = [sg["flops"] for sg in info["subgraphs"]]
    assert len(flops) == 2 and flops[0] == flops[1] > 0


def test_outputs_match_onnxruntime(compiled: tuple[str, Path, dict]) -> None:
    name, neff, _ = compiled
    inputs = {"input_ids": EXPECTED["gpt64/in/input_ids"]}
    got = LoadedModel(read_neff(neff)).execute(inputs)
    session = ort.InferenceSession(str(FIXTURES / f"{name}.onnx"),
                                   providers=["CPUExecutionProvider"])
    (want,) = session.run(["logits"], inputs)
    np.testing.assert_allclose(got["logits"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["logits"], EXPECTED["gpt64/out/logits"], rtol=1e-4,
                               atol=1e-4)
