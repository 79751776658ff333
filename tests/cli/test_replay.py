"""A repeated compile command line is served from its record without click or the driver,
and anything that could make the answer differ sends it down the full path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nxcc.cli.replay import replay
from tests.cli_helpers import REPO, neuronx_cc

MLP = REPO / "examples" / "mlp.onnx"


def _compile_twice(tmp_path: Path, *extra: str) -> tuple[list[str], bytes]:
    model = tmp_path / "mlp.onnx"
    shutil.copyfile(MLP, model)
    argv = ["compile", str(model), "--framework", "ONNX", "--target", "trn1",
            "--output", str(tmp_path / "m.neff"), *extra]
    first = neuronx_cc(*argv, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    return argv, (tmp_path / "m.neff").read_bytes()


def test_a_repeated_command_line_is_replayed_without_click(tmp_path: Path) -> None:
    argv, neff = _compile_twice(tmp_path)
    (tmp_path / "m.neff").unlink()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "nxcc", *argv],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Compiler status PASS\n"
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "nxcc.cli.replay" in imported
    assert not {"click", "numpy", "nxcc.driver.compile", "nxcc.cli.main"} & imported
    assert (tmp_path / "m.neff").read_bytes() == neff
    log = (tmp_path / "log-neuron-cc.txt").read_text()
    assert "compile cache hit: MODULE_" in log and "wrote " in log


def test_replay_serves_only_the_recorded_command_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    argv, neff = _compile_twice(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert replay(argv)
    assert (tmp_path / "m.neff").read_bytes() == neff
    assert not replay([*argv, "--verbose", "info"])  # another command line: full path
    assert not replay(argv[:-2] + ["--output", str(tmp_path / "other.neff")])


def test_a_changed_model_is_not_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv, _ = _compile_twice(tmp_path)
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "mlp.onnx"
    model.write_bytes(model.read_bytes() + b"\0")
    (tmp_path / "m.neff").write_bytes(b"kept")
    assert not replay(argv)
    assert (tmp_path / "m.neff").read_bytes() == b"kept"


def test_a_damaged_entry_is_not_replayed(tmp_path: Path, private_compile_cache: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    argv, neff = _compile_twice(tmp_path)
    monkeypatch.chdir(tmp_path)
    (entry,) = private_compile_cache.glob("*/MODULE_*[!k]")
    neff_file = entry / "model.neff"
    neff_file.write_bytes(neff_file.read_bytes()[:-1] + b"\1")
    assert not replay(argv)
    again = neuronx_cc(*argv, cwd=tmp_path)  # the full path compiles it again
    assert again.returncode == 0 and (tmp_path / "m.neff").read_bytes() == neff


def test_another_environment_or_directory_is_not_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv, _ = _compile_twice(tmp_path)
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert not replay(argv)
    monkeypatch.chdir(tmp_path)
    assert replay(argv)
    monkeypatch.setenv("NEURON_CC_FLAGS", "--auto-cast none")
    assert not replay(argv)


def test_no_cache_command_lines_are_never_recorded(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    argv, _ = _compile_twice(tmp_path, "--no-cache")
    monkeypatch.chdir(tmp_path)
    assert not replay(argv)
