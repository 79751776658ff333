"""Every committed PyTorch export compiles for trn1 and runs to onnxruntime's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.cli_helpers import MODELS

STATIC_MODELS = sorted(p for p in MODELS.glob("*.onnx") if "dynbatch" not in p.name)


def random_inputs(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        out[inp.name] = rng.standard_normal(dims).astype(np.float32)
    return out


@pytest.mark.parametrize("path", STATIC_MODELS, ids=lambda p: p.stem)
@pytest.mark.parametrize("optlevel", [1, 2, 3])
def test_model_matches_onnxruntime(path: Path, optlevel: int, tmp_path: Path) -> None:
    out = tmp_path / "m.neff"
    compile_model(str(path), CompileOptions(target="trn1", optlevel=optlevel, output=str(out)),
                  emit=lambda s: None)
    model = LoadedModel(read_neff(out, validate_hash=True))
    inputs = random_inputs(path)
    got = model.execute(inputs)
    session = ort.InferenceSession(str(path))
    names = [o.name for o in session.get_outputs()]
    for name, ref in zip(names, session.run(None, inputs), strict=True):
        np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-5)
