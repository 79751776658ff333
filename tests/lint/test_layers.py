"""The layers point one way, as the import-linter contracts in pyproject.toml say.

`lint-imports` runs on the source tree; then on a copy of it with one deliberate upward import
(the IR importing the backend), which the contracts must refuse.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import REPO
from tests.lint.staged_tree import stage_package

needs_linter = pytest.mark.skipif(shutil.which("lint-imports") is None,
                                  reason="import-linter comes with the test extra")


def _lint(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(["lint-imports", "--config", str(config), "--no-cache"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


@needs_linter
def test_contracts_kept(tmp_path: Path) -> None:
    stage_package(tmp_path)
    r = _lint(tmp_path, REPO / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@needs_linter
def test_upward_import_is_refused(tmp_path: Path) -> None:
    pkg = stage_package(tmp_path)
    core = pkg / "ir" / "core.py"
    core.write_text(core.read_text() + "\nimport nxcc.backend.neff  # noqa: E402,F401\n")
    r = _lint(tmp_path, REPO / "pyproject.toml")
    assert r.returncode != 0
    assert "nxcc.ir.core -> nxcc.backend.neff" in r.stdout
