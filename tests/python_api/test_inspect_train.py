"""`nxcc.inspect` is what `inspect-neff --json` prints; `nxcc.train` reads, checks and runs
a configuration as `neuronx-cc train` does."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import nxcc
from tests.inprocess import run_cli
from tests.python_api.conftest import EXAMPLES
from tests.python_api.test_load_kinds import SPMD

CONFIGS = sorted((EXAMPLES / "train").glob("*.yaml"))


@pytest.mark.parametrize("source,target", [
    (EXAMPLES / "mlp.onnx", "trn1"), (EXAMPLES / "cnn.onnx", "trn2"),
    (SPMD / "megatron_mlp.compiled.hlo", "trn1")])
def test_inspect_is_what_inspect_neff_json_prints(source: Path, target: str,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    neff = nxcc.compile(source, target=target, output=path)
    outcome = run_cli("inspect-neff", str(path), "--json")
    assert outcome.status == 0, outcome.stderr
    printed = json.loads(outcome.stdout)
    assert nxcc.inspect(path) == printed
    assert nxcc.inspect(str(path)) == printed and nxcc.inspect(neff) == printed
    in_memory = nxcc.inspect(nxcc.Neff(data=path.read_bytes()))
    assert in_memory == {**printed, "file": None}


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_a_dry_run_returns_the_layout_the_command_prints(config: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = run_cli("train", str(config), "--dry-run", "--json")
    assert outcome.status == 0, outcome.stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = nxcc.train(config, dry_run=True)
    assert info == json.loads(outcome.stdout)
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing
    printed = [ln.removeprefix("WARNING: ") for ln in outcome.stderr.splitlines()]
    assert [str(w.message) for w in caught] == printed


def test_train_runs_and_returns_the_summary(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    with pytest.warns(UserWarning, match="keys accepted but not acted on"):
        summary = nxcc.train(EXAMPLES / "train" / "megatron_gpt_tiny.yaml",
                             ["trainer.max_steps=2", f"exp_manager.exp_dir={exp}"])
    assert (summary["steps"], summary["world_size"], summary["tp"]) == (2, 8, 2)
    assert summary["final_loss"] == summary["losses"][-1] and exp.is_dir()
