"""The repository's root, for tests and helpers at any depth of tests/.

Tests name their data by its path from the root (``REPO / "tests/compiler/hlo/fixtures"``),
never by counting parent folders from their own file, so a test file can move without its
paths breaking (tests/lint/test_test_tree.py refuses `parents[N]` and `.parent.parent`).
Generator scripts run with another Python (`python tests/.../make_*.py`) find the root the
same way without importing this module: the nearest folder above them holding pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
