"""A JAX training step (MLP, Adam, donated arguments) compiled from its HLO text: the
header's input_output_alias becomes the NEFF's, and `run --steps 10` feeds each aliased
output back as its input, giving JAX's parameters and losses (make_jax_reference.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from tests.cli_helpers import REPO, neuronx_cc

DATA = REPO / "tests/e2e/data"


@pytest.mark.parametrize("name", ["jax_adam", "jax_cnn"])
@pytest.mark.parametrize("form", ["lowered", "compiled"])
def test_ten_steps_give_jax_parameters(name: str, form: str, tmp_path: Path) -> None:
    """jax_cnn's step holds gather/scatter-add, convolution, max and average pooling
    (select_and_scatter), dynamic slices and a scanned layer stack (while loops)."""
    neff = tmp_path / "step.neff"
    result = neuronx_cc("compile", str(DATA / f"{name}_step.{form}.hlo"), "--target", "trn1",
                        "--output", str(neff))
    assert result.returncode == 0, result.stderr
    manifest = read_neff(neff).manifest
    assert [(a["output"], a["input"]) for a in manifest["input_output_alias"]] == \
        [(i, i) for i in range(13)]
    assert "state" not in manifest  # the caller holds donated buffers
    names = [i["name"] for i in manifest["inputs"]]
    with np.load(DATA / f"{name}_args.npz") as args:
        inputs = tmp_path / "in.npz"
        np.savez(inputs, **{n: args[f"arg{i}"] for i, n in enumerate(names)})
    out = tmp_path / "out.npz"
    result = neuronx_cc("run", str(neff), "--inputs", str(inputs), "--steps", "10",
                        "--output", str(out), "-q")
    assert result.returncode == 0, result.stderr
    with np.load(out) as o, np.load(DATA / f"{name}_reference.npz") as ref:
        assert o["output12"].shape == () and int(o["output12"]) == 10  # last step's counter
        assert o["output13"].shape == (10,)  # the loss, stacked
        np.testing.assert_allclose(o["output13"], ref["losses"], rtol=1e-5)
        for i in range(4):
            np.testing.assert_allclose(o[f"output{i}"], ref[f"param{i}"], rtol=1e-5,
                                       atol=1e-6, err_msg=f"param{i}")


HLO = """HloModule m, input_output_alias={ALIAS}

ENTRY main {
  p0 = f32[2] parameter(0)
  p1 = s32[] parameter(1)
  a = f32[2] add(p0, p0)
  ROOT t = (f32[2], s32[]) tuple(a, p1)
}
"""


@pytest.mark.parametrize("alias, fragment", [
    ("{ {0}: (0, {1}, may-alias) }", "only whole parameters"),
    ("{ {1}: (0, {}, may-alias) }", "pairs output 1 (s32[]) with parameter 0 (f32[2])"),
])
def test_aliases_nxcc_cannot_keep_are_refused(alias: str, fragment: str,
                                              tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(HLO.replace("{ALIAS}", alias))
    result = neuronx_cc("compile", str(path), "--target", "trn1", "--output",
                        str(tmp_path / "m.neff"))
    assert result.returncode != 0
    assert fragment in result.stderr and "Traceback" not in result.stderr
