"""The Python API's tests: each test with no runtime variable from outside and a runtime
directory of its own, and no model left loaded after it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nxcc.backend.runtime.shared_runtime import RUNTIMES
from tests.cli_helpers import REPO

EXAMPLES = REPO / "examples"


@pytest.fixture(autouse=True)
def runtime_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    for name in list(os.environ):
        if name.startswith(("NEURON_RT_", "NXCC_")) or name == "NEURON_LOGICAL_NC_CONFIG":
            monkeypatch.delenv(name)
    runtime_dir = tmp_path / "nxcc-runtime"
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(runtime_dir))
    yield runtime_dir
    assert RUNTIMES.open_instances() == [], "a test left a model loaded"
