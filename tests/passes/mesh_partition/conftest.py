"""Fixtures for the SPMD tests: a clean runtime environment per test, and the JAX fixtures
(`make_fixtures.py`) compiled once per session."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.nrt import Runtime
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROGRAMS = ("megatron_mlp", "row_sum", "contraction_matmul", "attention_qkv", "dp_train_step",
            "fsdp_train_step", "constrained_mlp")


@pytest.fixture(autouse=True)
def runtime_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No runtime variable from outside; this test's own runtime directory."""
    for name in list(os.environ):
        if name.startswith(("NEURON_RT_", "NXCC_")) or name == "NEURON_LOGICAL_NC_CONFIG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(tmp_path / "nxcc-runtime"))
    return tmp_path


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    """An initialized runtime for trn1 (trn1.32xlarge), closed at the end."""
    rt = Runtime().init(target="trn1")
    try:
        yield rt
    finally:
        rt.close()


def data(name: str) -> dict[str, np.ndarray]:
    """JAX's global inputs (input0..) and outputs (output0..) of program `name`."""
    with np.load(FIXTURES / f"{name}.npz") as d:
        return {k: d[k] for k in d.files}


def meta(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def named_inputs(neff: Path, name: str) -> dict[str, np.ndarray]:
    """The global inputs of `name` keyed by the NEFF's input names (in parameter order)."""
    d = data(name)
    names = [e["name"] for e in read_neff(neff).manifest["inputs"]]
    return {n: d[f"input{i}"] for i, n in enumerate(names)}


def compile_hlo(src: Path, out: Path, target: str = "trn1", lnc: int | None = None,
                emit=lambda s: None) -> Path:
    compile_model(str(src), CompileOptions(target=target, lnc=lnc, output=str(out)), emit=emit)
    return out


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
