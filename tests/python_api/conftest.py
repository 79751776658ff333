"""The Python API's tests: each test with no runtime variable from outside and a runtime
directory of its own, and no model left loaded after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nxcc.backend.runtime.shared_runtime import RUNTIMES
from tests.paths import REPO
from tests.runtime_env import isolate_runtime

EXAMPLES = REPO / "examples"


@pytest.fixture(autouse=True)
def runtime_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield isolate_runtime(monkeypatch, tmp_path)
    assert RUNTIMES.open_instances() == [], "a test left a model loaded"
