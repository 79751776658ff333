"""A compile killed (SIGKILL) at each point of writing its compile cache entry (issues 11, 16)
leaves no entry that reads as valid unless it is the whole one: the next compile is a miss
(or, once the entry was renamed into place, a hit) and writes the right NEFF; `cache list`
shows no half entry; `cache clean` removes what the killed writer left. The writer is
stopped exactly at each point by `tests/cli/paused_compile.py`, which wraps the calls the
points lie at in the compiling process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nxcc.driver.cache.store import read_entry
from tests.cli_helpers import REPO
from tests.inprocess import assert_clean_error, run_cli

DATA = REPO / "tests/driver/data"
MODEL = DATA / "matmul.hlo"
#: Points of a successful compile's write, in order, and whether the entry is published.
POINTS = [("staging", False), ("model", False), ("neff", False), ("flags", False),
          ("meta", False), ("synced", False), ("removed", False), ("published", True),
          ("hit", True)]


def _compile_argv(model: Path, out: Path, cache: Path) -> list[str]:
    return ["compile", str(model), "--framework", "XLA", "--target", "trn1", "-o", str(out),
            "--cache-dir", str(cache), "--verbose", "info", "--logfile", str(out) + ".log"]


def _killed_at(point: str, model: Path, out: Path, cache: Path, tmp: Path) -> None:
    """Run a compile that pauses at `point`, wait until it is there, SIGKILL it."""
    marker = tmp / f"at-{point}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.cli.paused_compile", point,
                             str(marker), *_compile_argv(model, out, cache)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"the compile ended before {point}: {proc.communicate()[1]}")
        assert time.monotonic() < deadline, f"never reached {point}"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _valid_neffs(cache: Path) -> list[bytes]:
    """The NEFF of every entry a lookup would use (a damaged one is a miss, not listed)."""
    found = []
    for path in sorted(cache.glob("neuronxcc-*/MODULE_*")):  # what lookups read
        entry = read_entry(str(path))
        data = None if entry is None or entry.failed else entry.neff_bytes()
        if data is not None:
            found.append(data)
    return found


def _entry_names(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob("neuronxcc-*/MODULE_*") if p.is_dir())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The module's NEFF, compiled without the cache."""
    d = tmp_path_factory.mktemp("ref")
    outcome = run_cli("compile", str(MODEL), "--framework", "XLA", "--target", "trn1", "-o",
                      str(d / "m.neff"), "--no-cache", "--logfile", str(d / "log"))
    assert outcome.status == 0, outcome.stderr
    return (d / "m.neff").read_bytes()


@pytest.mark.parametrize("damaged", [False, True], ids=["empty-cache", "damaged-entry"])
@pytest.mark.parametrize(("point", "published"), POINTS, ids=[p for p, _ in POINTS])
def test_killed_while_writing_an_entry(tmp_path: Path, reference: bytes, point: str,
                                       published: bool, damaged: bool) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.neff"
    if damaged:  # an entry to replace: compiled, then its NEFF cut short
        assert run_cli(*_compile_argv(MODEL, out, cache)).status == 0
        (neff,) = cache.glob("neuronxcc-*/MODULE_*/model.neff")
        neff.write_bytes(neff.read_bytes()[:-10])
        out.unlink()
    _killed_at(point, MODEL, out, cache, tmp_path)
    listed = run_cli("cache", "list", "--json", "--cache-dir", str(cache))
    assert listed.status == 0, listed.stderr
    assert _valid_neffs(cache) == ([reference] if published else []), point
    assert not out.exists() or out.read_bytes() == reference
    again = run_cli(*_compile_argv(MODEL, out, cache))
    assert again.status == 0, again.stderr
    assert out.read_bytes() == reference
    if published:
        assert "compile cache hit" in again.stderr, again.stderr
    else:
        assert "compile cache miss" in again.stderr, again.stderr
    assert len(_entry_names(cache)) == 1
    cleaned = run_cli("cache", "clean", "--cache-dir", str(cache))
    assert cleaned.status == 0 and cleaned.stdout.startswith("removed 1 entries")
    assert list(cache.glob("neuronxcc-*/*")) == []  # the killed writer's leftovers too


def test_killed_while_remembering_a_failure(tmp_path: Path) -> None:
    """Killed after `error.json`, before publishing: not remembered; the next compile fails
    the same way and remembers it."""
    cache, out = tmp_path / "cache", tmp_path / "out.neff"
    bad = tmp_path / "bad.hlo"
    bad.write_text(MODEL.read_text().replace(" dot(", " frobnicate("))
    _killed_at("error", bad, out, cache, tmp_path)
    assert _entry_names(cache) == []
    again = run_cli(*_compile_argv(bad, out, cache))
    assert_clean_error(again, "NCC_EUOC002", "frobnicate")
    assert "compile cache miss" in again.stderr
    assert len(_entry_names(cache)) == 1 and not out.exists()
