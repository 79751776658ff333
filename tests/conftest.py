"""Every test gets its own runtime directory, so core locks never leak between tests or
collide with a `neuronx-cc run` someone left running on the machine. JAX's SPMD programs
(tests/passes/mesh_partition/fixtures/) are compiled here once per session, for every suite
that runs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nxcc.backend.runtime.nrt import Runtime
from tests.passes.mesh_partition.programs import FIXTURES, PROGRAMS, compile_hlo


@pytest.fixture(scope="session", autouse=True)
def session_runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The runtime directory of fixtures wider than one test (set before any of them runs):
    a module's fixture that runs a model never takes the machine's cores."""
    path = tmp_path_factory.mktemp("nxcc-session-runtime")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NXCC_RUNTIME_DIR", str(path))
        yield path


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


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    """An initialized runtime for trn1 (trn1.32xlarge), closed at the end."""
    rt = Runtime().init(target="trn1")
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture(scope="session")
def spmd_neffs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each compiled (partitioned) JAX program as a trn1 -lnc 1 NEFF."""
    d = tmp_path_factory.mktemp("spmd-neffs")
    return {n: compile_hlo(FIXTURES / f"{n}.compiled.hlo", d / f"{n}.neff") for n in PROGRAMS}


@pytest.fixture(scope="session")
def lnc2_neffs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each lowered (annotated, global) JAX program as a trn2 -lnc 2 NEFF."""
    d = tmp_path_factory.mktemp("lnc2-neffs")
    return {n: compile_hlo(FIXTURES / f"{n}.lowered.hlo", d / f"{n}.neff", "trn2", 2)
            for n in PROGRAMS}


@pytest.fixture(scope="session")
def lowered_neffs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each lowered (annotated, global) JAX program, HLO text (NAME) and StableHLO
    (NAME.mlir), as a trn1 -lnc 1 NEFF: partitioned by mesh-partition for 8 ranks."""
    d = tmp_path_factory.mktemp("lowered-neffs")
    out = {n: compile_hlo(FIXTURES / f"{n}.lowered.hlo", d / f"{n}.neff") for n in PROGRAMS}
    out.update({f"{n}.mlir": compile_hlo(FIXTURES / f"{n}.lowered.mlir", d / f"{n}.mlir.neff")
                for n in PROGRAMS})
    return out
