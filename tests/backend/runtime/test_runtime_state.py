"""The Python API of a training step: state kept by the loaded model across executions,
read and replaced through the handle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.status import NrtError
from nxcc.backend.runtime.steps import run_steps
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.compile_step import compile_training
from nxcc.driver.train.step_options import training_options
from tests.cli_helpers import REPO


@pytest.fixture
def step_neff(tmp_path: Path) -> Path:
    out = tmp_path / "step.neff"
    options = CompileOptions(target="trn1", output=str(out))
    step = training_options(loss="cross-entropy", loss_input="y", label_input="labels",
                            optimizer="sgd", lr=0.1, momentum=0.9)
    compile_training(str(REPO / "examples" / "mlp.onnx"), options, step, emit=lambda s: None)
    return out


def test_state_persists_in_the_loaded_model(step_neff: Path) -> None:
    rng = np.random.default_rng(0)
    batch = {"x": rng.normal(size=(4, 16)).astype(np.float32),
             "labels": np.array([0, 1, 2, 3])}
    with Runtime() as rt:
        model = rt.load(step_neff)
        inputs, outputs = rt.tensor_info(model)
        assert [i.name for i in inputs] == ["x", "labels"]
        assert [o.name for o in outputs] == ["loss"]
        before = model.state()
        first = rt.execute(model, batch)["loss"]
        after = model.state()
        assert int(after["optimizer.step"]) == 1
        assert not np.array_equal(before["0.weight"], after["0.weight"])
        second = rt.execute(model, batch)["loss"]
        assert second < first
        model.load_state(before)
        np.testing.assert_array_equal(rt.execute(model, batch)["loss"], first)
        stacked = run_steps(rt, model, batch, 3)
        assert stacked["loss"].shape == (3,) and stacked["loss"][0] == second
        with pytest.raises(NrtError, match="'bogus', which is not state"):
            model.load_state({**before, "bogus": np.zeros(1)})
        with pytest.raises(NrtError, match="state '0.bias' has dtype float64"):
            model.load_state({**before, "0.bias": before["0.bias"].astype(np.float64)})
