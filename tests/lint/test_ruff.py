"""The code base is ruff clean (configured in pyproject.toml), complexity included."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import REPO

# ruff on PATH, else beside this interpreter (a virtual environment run without activating it)
RUFF = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff comes with the test extra")


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert RUFF is not None
    return subprocess.run([RUFF, "check", "--no-cache", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=120)


@needs_ruff
def test_ruff_clean() -> None:
    r = _ruff(".")
    assert r.returncode == 0, r.stdout + r.stderr


@needs_ruff
def test_complexity_over_15_is_refused() -> None:
    """pyproject's mccabe limit applies: a function of 16 branches fails, one of 15 passes."""
    def function(branches: int) -> str:
        body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(branches - 1))
        return f"def f(x: int) -> int:\n{body}    return -1\n"

    inside = str(REPO / "ir" / "example.py")
    too_complex = _ruff("--stdin-filename", inside, "-", stdin=function(16))
    assert too_complex.returncode != 0 and "C901" in too_complex.stdout, too_complex.stdout
    assert _ruff("--stdin-filename", inside, "-", stdin=function(15)).returncode == 0
