"""docs/python-api.md: every Python snippet runs from the repository root, and the flag
table names every flag `nxcc.compile` takes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from nxcc.driver.api.flags import FLAGS
from tests.cli_helpers import REPO

PAGE = (REPO / "docs" / "python-api.md").read_text()
SNIPPETS = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)


def test_the_page_has_its_example_first() -> None:
    assert len(SNIPPETS) >= 6
    first = SNIPPETS[0]
    assert "examples/mlp.onnx" in first and "examples/mlp_inputs.npz" in first
    assert len(first.strip().splitlines()) <= 12


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_each_snippet_runs(index: int) -> None:
    result = subprocess.run([sys.executable, "-c", SNIPPETS[index]], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "a snippet shows what it did"


def test_every_flag_is_in_the_table() -> None:
    table = PAGE[PAGE.index("| Python | command line |"):]
    missing = [name for name in FLAGS if f"`{name}`" not in table]
    assert missing == []
