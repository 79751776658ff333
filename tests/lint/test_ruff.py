"""The code base is ruff clean (configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.cli_helpers import REPO


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff comes with the test extra")
def test_ruff_clean() -> None:
    r = subprocess.run(["ruff", "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
