"""Faults in the middle of a command (issue 16): a compile killed at any point leaves the
previous NEFF intact and no temporary file; a run stopped by SIGINT or SIGTERM writes no
output, exits in one line and frees its cores; a full disk during a compile is one line
and no file. The compile is slowed by running it through `tests.cli.slow_compile`."""

from __future__ import annotations

import errno
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
from tests.backend.runtime.neffs import spin_neff
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.inprocess import assert_clean_error, run_cli

MODEL = REPO / "examples" / "cnn.onnx"
PREVIOUS = REPO / "examples" / "mlp.onnx"
SLOW = "0.12"


def _compile_argv(out: Path, log: Path, slow: bool = False) -> list[str]:
    command = ["-m", "tests.cli.slow_compile", SLOW] if slow else ["-m", "nxcc"]
    return [sys.executable, *command, "compile", str(MODEL), "--target", "trn1",
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
    done = subprocess.run(_compile_argv(d / "cnn.neff", d / "log", slow=True), env=_env(),
                          capture_output=True, timeout=120)
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
    proc = subprocess.Popen(_compile_argv(target, tmp_path / "log", slow=True), env=_env(),
                            stderr=subprocess.PIPE, text=True)
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


FULL_DISK = [(100, False), (4096, False), (4096, True)]


@pytest.mark.parametrize(("limit", "cache"), FULL_DISK,
                         ids=["log-fills-first", "neff-fills", "cache-entry-fills"])
def test_full_disk_during_compile(tmp_path: Path, outputs: tuple[bytes, float],
                                  limit: int, cache: bool) -> None:
    """RLIMIT_FSIZE (SIGXFSZ ignored, so a write fails with EFBIG as on a full disk)
    below the log's or the NEFF's size, the NEFF written directly or into the compile
    cache first: one NCC_EIO001 line (a disk error, exit 1, not an argument error), the
    previous NEFF untouched, nothing else left, no cache entry."""
    previous, _ = outputs
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "model.neff"
    target.write_bytes(previous)

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cache_dir = tmp_path / "cache"
    flags = ["--cache-dir", str(cache_dir)] if cache else ["--no-cache"]
    result = subprocess.run(_compile_argv(target, out_dir / "log.txt") + flags, env=_env(),
                            preexec_fn=small_disk, capture_output=True, text=True, timeout=120)
    line = assert_one_line_error(result, "[NCC_EIO001] cannot write", "File too large")
    assert result.returncode == 1
    assert ("compile cache entry" in line) == cache, line
    assert target.read_bytes() == previous
    assert _leftovers(out_dir, {"model.neff", "log.txt"}) == []
    assert [p for p in cache_dir.glob("neuronxcc-*/MODULE_*") if p.is_dir()] == []
    assert list(cache_dir.glob("neuronxcc-*/.tmp-*")) == []


def test_no_space_left_is_a_disk_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    """ENOSPC when the NEFF is flushed to disk (fsync reports a full disk on file systems
    that allocate late): NCC_EIO001 naming the output and the reason, exit 1, no temporary
    file."""
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "m.neff"
    outcome = run_cli("compile", str(PREVIOUS), "--target", "trn1", "--output", str(target),
                      "--no-cache", "--logfile", str(tmp_path / "log.txt"))
    assert_clean_error(outcome, "[NCC_EIO001]", repr(str(target)), "No space left on device")
    assert outcome.status == 1
    assert _leftovers(tmp_path, {"log.txt"}) == []


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
