"""Every test gets its own runtime directory, so core locks never leak between tests or
collide with a `neuronx-cc run` someone left running on the machine."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("nxcc-runtime")
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(path))
    return path


@pytest.fixture(autouse=True)
def private_compile_cache(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty compile cache of its own: no test writes into
    /var/tmp/neuron-compile-cache, and no test sees another's entries."""
    path = tmp_path_factory.mktemp("nxcc-compile-cache")
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", str(path))
    return path
