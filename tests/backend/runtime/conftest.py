"""Fixtures: a clean runtime environment per test (own NXCC_RUNTIME_DIR) and test NEFFs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nxcc.backend.runtime.nrt import Runtime
from tests.backend.runtime.neffs import spin_neff, weights_neff
from tests.runtime_env import runtime_env  # noqa: F401  (autouse in this folder)


@pytest.fixture
def runtimes() -> Iterator[list[Runtime]]:
    """Runtimes a test creates, closed at its end even when it fails."""
    made: list[Runtime] = []
    yield made
    for rt in made:
        rt.close()


@pytest.fixture
def start(runtimes: list[Runtime], monkeypatch: pytest.MonkeyPatch):
    """start(VAR=value, ..., target=None) -> an initialized Runtime with that environment."""

    def make(target: str | None = None, **env: str) -> Runtime:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        rt = Runtime()
        runtimes.append(rt)
        rt.init(target=target)
        for name in env:
            monkeypatch.delenv(name)
        return rt

    return make


@pytest.fixture(scope="session")
def neff_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("neffs")


@pytest.fixture(scope="session")
def spin(neff_dir: Path) -> Path:
    """trn1 spin model (lnc 1)."""
    return spin_neff(neff_dir / "spin-trn1.neff")


@pytest.fixture(scope="session")
def spin_trn2(neff_dir: Path) -> Path:
    """trn2 spin model compiled at lnc 1."""
    return spin_neff(neff_dir / "spin-trn2-lnc1.neff", "trn2", 1)


@pytest.fixture(scope="session")
def spin_trn2_lnc2(neff_dir: Path) -> Path:
    """trn2 spin model compiled at lnc 2 (two physical programs, one logical core)."""
    return spin_neff(neff_dir / "spin-trn2-lnc2.neff", "trn2", 2)


@pytest.fixture(scope="session")
def weights(neff_dir: Path) -> Path:
    return weights_neff(neff_dir / "weights.neff")
