"""Running `neuronx-cc` as a user does: a separate process, its exit code and output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

MODELS = REPO / "tests/e2e/models"


def neuronx_cc(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run `neuronx-cc ARGS` (through `python -m nxcc`, so it works from a source tree)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "nxcc", *args], cwd=cwd or REPO,
                          env=full_env, capture_output=True, text=True, timeout=300)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exactly one line on stderr, containing every fragment."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]
