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

LAYERS = ("compiler", "ir", "passes", "backend", "cli", "driver")
needs_linter = pytest.mark.skipif(shutil.which("lint-imports") is None,
                                  reason="import-linter comes with the test extra")


def _lint(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(["lint-imports", "--config", str(config), "--no-cache"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


@needs_linter
def test_contracts_kept() -> None:
    r = _lint(REPO, REPO / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@needs_linter
def test_upward_import_is_refused(tmp_path: Path) -> None:
    pkg = tmp_path / "nxcc"
    pkg.mkdir()
    shutil.copy(REPO / "nxcc" / "__init__.py", pkg / "__init__.py")
    for layer in LAYERS:
        shutil.copytree(REPO / layer, pkg / layer,
                        ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    core = pkg / "ir" / "core.py"
    core.write_text(core.read_text() + "\nimport nxcc.backend.neff  # noqa: E402,F401\n")
    r = _lint(tmp_path, REPO / "pyproject.toml")
    assert r.returncode != 0
    assert "nxcc.ir.core -> nxcc.backend.neff" in r.stdout
