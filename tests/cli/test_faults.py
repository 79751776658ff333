"""Faults in the middle of a command (issue 16): a compile killed at any point leaves the
previous NEFF intact and no temporary file; a run stopped by SIGINT or SIGTERM writes no
output, exits in one line and frees its cores; a full disk during a compile is one line
and no file. The compile is slowed with the test hook NXCC_TEST_SLOW_PASS."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.runtime.neffs import spin_neff

MODEL = REPO / "examples" / "cnn.onnx"
PREVIOUS = REPO / "examples" / "mlp.onnx"
SLOW = "0.12"


def _compile_argv(out: Path, log: Path) -> list[str]:
    return [sys.executable, "-m", "nxcc", "compile", str(MODEL), "--target", "trn1",
            "--output", str(out), "--logfile", str(log)]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def _leftovers(directory: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, float]:
    """The previous output's bytes (mlp), and how long the slowed cnn compile takes."""
    d = tmp_path_factory.mktemp("ref")
    assert neuronx_cc("compile", str(PREVIOUS), "--target", "trn1", "--output",
                      str(d / "m.neff"), "--logfile", str(d / "log")).returncode == 0
    start = time.monotonic()
    done = subprocess.run(_compile_argv(d / "cnn.neff", d / "log"), env=_env(
        NXCC_TEST_SLOW_PASS=SLOW), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return (d / "m.neff").read_bytes(), time.monotonic() - start


KILL_POINTS = [(signal.SIGKILL, p) for p in range(10)] + [(signal.SIGTERM, p)
                                                          for p in range(1, 10, 2)]


@pytest.mark.parametrize(("how", "point"), KILL_POINTS,
                         ids=[f"{h.name}-{p}" for h, p in KILL_POINTS])
def test_compile_killed_at_any_point(tmp_path: Path, outputs: tuple[bytes, float],
                                     how: signal.Signals, point: int) -> None:
    """Ten evenly spaced points of the whole compile (startup, import, each slowed pass,
    lowering, the NEFF write) with SIGKILL, five with SIGTERM."""
    previous, duration = outputs
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "model.neff"
    target.write_bytes(previous)
    proc = subprocess.Popen(_compile_argv(target, tmp_path / "log"),
                            env=_env(NXCC_TEST_SLOW_PASS=SLOW), stderr=subprocess.PIPE,
                            text=True)
    time.sleep(duration * (point + 0.5) / 10)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    assert _leftovers(out_dir, {"model.neff"}) == []
    data = target.read_bytes()
    if data != previous:  # the kill came after the rename: the new NEFF, whole
        assert read_neff(target).manifest["name"] == "cnn"
    elif how == signal.SIGTERM and proc.returncode != -signal.SIGTERM:
        # (-SIGTERM: it came before the CLI started, while Python was still importing)
        assert proc.returncode == 130, err
        assert err.strip().splitlines() == ["ERROR: interrupted"], err


@pytest.mark.parametrize("limit", [100, 4096], ids=["log-fills-first", "neff-fills"])
def test_full_disk_during_compile(tmp_path: Path, outputs: tuple[bytes, float],
                                  limit: int) -> None:
    """RLIMIT_FSIZE (SIGXFSZ ignored, so a write fails with EFBIG as on a full disk)
    below the log's or the NEFF's size: one line, the previous NEFF untouched, nothing
    else left."""
    previous, _ = outputs
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "model.neff"
    target.write_bytes(previous)

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(_compile_argv(target, out_dir / "log.txt"), env=_env(),
                            preexec_fn=small_disk, capture_output=True, text=True, timeout=120)
    assert_one_line_error(result, "File too large")
    assert target.read_bytes() == previous
    assert _leftovers(out_dir, {"model.neff", "log.txt"}) == []


def _as_in_a_terminal() -> None:
    """The run's Ctrl-C as a user's: a test runner started in the background (nohup, `&`)
    ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_run_interrupted(tmp_path: Path, how: signal.Signals) -> None:
    """A long run (a `while` loop of 10**9 steps) stopped by a signal: exit 130, one line,
    no output file, and its cores are free for the next process at once."""
    neff = spin_neff(tmp_path / "spin.neff")
    np.savez(tmp_path / "long.npz", n=np.array(10 ** 9, np.int32))
    np.savez(tmp_path / "short.npz", n=np.array(3, np.int32))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = _env(NXCC_RUNTIME_DIR=str(tmp_path / "rt"), NEURON_RT_EXEC_TIMEOUT="0")
    proc = subprocess.Popen([sys.executable, "-m", "nxcc", "run", str(neff), "--inputs",
                             str(tmp_path / "long.npz"), "--output", str(out_dir / "o.npz")],
                            env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until it holds its cores
        ls = neuronx_cc("ls", "--json", env={"NXCC_RUNTIME_DIR": str(tmp_path / "rt"),
                                             "NXCC_INSTANCE_TYPE": "trn1.32xlarge"})
        if str(proc.pid) in ls.stdout:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the run never took its cores")
    proc.send_signal(how)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["ERROR: interrupted"], err
    assert _leftovers(out_dir, set()) == []
    again = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "short.npz"), "-q",
                       env={"NXCC_RUNTIME_DIR": str(tmp_path / "rt")})
    assert again.returncode == 0, again.stderr
