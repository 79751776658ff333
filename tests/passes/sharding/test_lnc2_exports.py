"""The PyTorch transformer and LSTM exports give the same outputs at -lnc 2 (trn2) as at
-lnc 1 (trn1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.paths import REPO

EXPORTS = sorted((REPO / "tests/e2e/models/transformers").glob("*.onnx"))
EXPECTED = np.load(EXPORTS[0].parent / "expected.npz")


def inputs_of(path: Path) -> dict[str, np.ndarray]:
    family = path.stem.split("_")[0]
    prefix = f"{family}/in/"
    return {k[len(prefix):]: v for k, v in EXPECTED.items() if k.startswith(prefix)}


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_lnc2_matches_lnc1(path: Path, tmp_path: Path) -> None:
    inputs = inputs_of(path)
    outputs = []
    for target in ("trn1", "trn2"):
        neff = tmp_path / f"{target}.neff"
        compile_model(str(path), CompileOptions(target=target, output=str(neff)),
                      emit=lambda s: None)
        model = LoadedModel(read_neff(neff))
        assert len(model.programs) == (2 if target == "trn2" else 1)
        outputs.append(model.execute(inputs))
    for name, one_core in outputs[0].items():
        # float32 sums split across cores reassociate: equal to a few ulps of the magnitude
        np.testing.assert_allclose(outputs[1][name], one_core, rtol=1e-5, atol=1e-5)
