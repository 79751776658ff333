"""A test that runs the runtime sees no runtime variable from outside and has a runtime
directory of its own. A folder's conftest.py imports `runtime_env` to make it autouse there:

    from tests.runtime_env import runtime_env  # noqa: F401  (autouse in this folder)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def is_runtime_variable(name: str) -> bool:
    return name.startswith(("NEURON_RT_", "NXCC_")) or name == "NEURON_LOGICAL_NC_CONFIG"


def isolate_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Remove every runtime variable; NXCC_RUNTIME_DIR becomes tmp_path/nxcc-runtime,
    which is returned."""
    for name in list(os.environ):
        if is_runtime_variable(name):
            monkeypatch.delenv(name)
    runtime_dir = tmp_path / "nxcc-runtime"
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(runtime_dir))
    return runtime_dir


@pytest.fixture(autouse=True)
def runtime_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No runtime variable from outside; this test's own runtime directory."""
    return isolate_runtime(monkeypatch, tmp_path)
