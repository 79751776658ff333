"""The source type-checks: mypy, configured in pyproject.toml (`[tool.mypy]`), finds no error.

mypy runs on the package as installed (`-p nxcc` on the tree `staged_tree` lays out), once for
the session with its cache in a temporary folder; then once more, incrementally on that cache,
on the same tree with one type error added, which it must report.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_helpers import REPO
from tests.lint.staged_tree import stage_package

needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy comes with the test extra")

#: a module few others import, so that the incremental re-check after the edit stays short
PROBED = Path("cli") / "entry.py"
PROBE = '\n_TYPE_PROBE: int = "not an int"\n'


@dataclass(frozen=True)
class MypyRuns:
    """mypy's output on the source as it is, and on it with `PROBE` appended to `PROBED`."""

    clean: subprocess.CompletedProcess[str]
    probed: subprocess.CompletedProcess[str]


def _mypy(root: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(cache), "--no-error-summary", "-p", "nxcc"],
        cwd=root, capture_output=True, text=True, timeout=600)


def _errors(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in r.stdout.splitlines() if ": error:" in line]


@pytest.fixture(scope="module")
def mypy_runs(tmp_path_factory: pytest.TempPathFactory) -> MypyRuns:
    root = tmp_path_factory.mktemp("typed")
    pkg = stage_package(root)
    cache = tmp_path_factory.mktemp("mypy_cache")
    clean = _mypy(root, cache)
    probed_file = pkg / PROBED
    probed_file.write_text(probed_file.read_text() + PROBE)
    return MypyRuns(clean, _mypy(root, cache))


@needs_mypy
def test_source_type_checks(mypy_runs: MypyRuns) -> None:
    r = mypy_runs.clean
    assert r.returncode == 0, r.stdout + r.stderr


@needs_mypy
def test_type_error_is_reported(mypy_runs: MypyRuns) -> None:
    """The probe's error, and nothing else, is what the edit adds to mypy's output."""
    r = mypy_runs.probed
    assert r.returncode == 1, r.stdout + r.stderr
    before = set(_errors(mypy_runs.clean))
    added = [line for line in _errors(r) if line not in before]
    assert len(added) == 1, r.stdout
    assert added[0].startswith(f"nxcc/{PROBED.as_posix()}:"), added[0]
    assert added[0].endswith("[assignment]"), added[0]
