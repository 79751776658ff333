"""The installed distribution has exactly one top-level package, `nxcc`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.cli_helpers import REPO


def test_wheel_has_one_top_level_package(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = tmp_path.glob("nxcc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"nxcc"}
    for layer in ("compiler", "ir", "passes", "backend", "driver", "cli", "nxd"):
        assert f"nxcc/{layer}/__init__.py" in names
    assert "nxcc/ir/ir.lark" in names and "nxcc/__main__.py" in names
    assert "nxcc/torch/__init__.py" in names and "nxcc/jax/__init__.py" in names
