"""Every test gets its own runtime directory, so core locks never leak between tests or
collide with a `neuronx-cc run` someone left running on the machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("nxcc-runtime")
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(path))
    return path


@pytest.fixture(scope="session", autouse=True)
def session_compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The compile cache of fixtures wider than one test (set before any of them runs)."""
    path = tmp_path_factory.mktemp("nxcc-session-compile-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEURON_COMPILE_CACHE_URL", str(path))
        yield path


@pytest.fixture(autouse=True)
def private_compile_cache(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty compile cache of its own: no test writes into
    /var/tmp/neuron-compile-cache, and no test sees another's entries."""
    path = tmp_path_factory.mktemp("nxcc-compile-cache")
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", str(path))
    return path


@pytest.fixture
def any_even_ranks(monkeypatch: pytest.MonkeyPatch) -> str:
    """Train on a simulated inf2.48xlarge, whose ring runs collectives on any even number of
    ranks: for layouts of 4 or 6 ranks, which a trn1.32xlarge (the default instance; sets
    of 2, 8 or 32) refuses."""
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "inf2.48xlarge")
    return "inf2.48xlarge"
