"""The package as it is installed, staged from a checkout for tools that read files.

In a checkout `nxcc.<layer>` is found through `nxcc.__path__` (see `nxcc/__init__.py`), which
import-linter and the type checker do not execute; they are run on a copy laid out as the
wheel lays it out (`<dir>/nxcc/<layer>/...`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli_helpers import REPO

LAYERS = ("backend", "cli", "compiler", "driver", "ir", "nxd", "passes")


def stage_package(into: Path) -> Path:
    """Copy `nxcc/` and the layer folders to `into/nxcc/`; returns that folder."""
    pkg = into / "nxcc"
    skip = shutil.ignore_patterns("__pycache__", "*.md")
    shutil.copytree(REPO / "nxcc", pkg, ignore=skip)
    for layer in LAYERS:
        shutil.copytree(REPO / layer, pkg / layer, ignore=skip)
    return pkg
