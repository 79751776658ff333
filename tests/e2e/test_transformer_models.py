"""PyTorch exports of a BERT-style encoder, a GPT-style decoder and an LSTM tagger
(TorchScript exporter at opsets 14 and 17, dynamo exporter at 18; made by
tests/e2e/models/make_transformers.py; with a larger GPT, `gpt64`, from the TorchScript exporter
at opset 17 and dynamo at 18) compile and match onnxruntime and PyTorch's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.paths import REPO

DIR = REPO / "tests/e2e/models/transformers"
MODELS = sorted(DIR.glob("*.onnx"))
RTOL, ATOL = 1e-3, 1e-4


def test_every_model_and_exporter_is_there() -> None:
    names = {p.stem for p in MODELS}
    assert names == {f"{m}_{e}" for m in ("bert", "gpt", "lstm")
                     for e in ("ts14", "ts17", "dyn18")} | {"gpt64_ts17", "gpt64_dyn18"}


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_transformer_matches(path: Path, tmp_path: Path) -> None:
    family = path.stem.split("_")[0]
    expected = np.load(DIR / "expected.npz")
    inputs = {k.split("/")[-1]: expected[k] for k in expected.files
              if k.startswith(f"{family}/in/")}
    torch_out = {k.split("/")[-1]: expected[k] for k in expected.files
                 if k.startswith(f"{family}/out/")}
    neff = tmp_path / "m.neff"
    compile_model(str(path), CompileOptions(target="trn1", output=str(neff)),
                  emit=lambda _line: None)
    got = LoadedModel(read_neff(neff)).execute(inputs)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for name, ref in zip(names, session.run(None, inputs), strict=True):
        np.testing.assert_allclose(got[name], ref, rtol=RTOL, atol=ATOL, err_msg=name)
        np.testing.assert_allclose(got[name], torch_out[name], rtol=RTOL, atol=ATOL,
                                   err_msg=name)
