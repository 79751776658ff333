"""Production code carries no test-only branch: a test that must stop, slow or break the
compiler does it from outside (a wrapper script that wraps functions in the process it
starts, as `tests/cli/paused_compile.py` and `tests/cli/slow_compile.py` do), never through
a variable the code reads for the tests' sake."""

from __future__ import annotations

import re

from tests.cli_helpers import REPO
from tests.lint.staged_tree import LAYERS

#: what a test hook looks like: a variable named for the tests
HOOK = re.compile(r"NXCC_TEST|_TEST_HOOK|TEST_PAUSE")


def test_no_test_hook_in_the_source() -> None:
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
             for folder in (*LAYERS, "nxcc") for path in sorted((REPO / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if HOOK.search(line)]
    assert not found, "\n".join(found)
