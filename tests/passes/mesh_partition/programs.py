"""JAX's SPMD programs (`make_fixtures.py`, stored in `fixtures/`): their arrays, what JAX
said about them, and compiling them. Shared by the mesh partitioner's tests and by every
suite that runs these programs (tests/conftest.py compiles them once per session)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from nxcc.backend.neff import read_neff
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.paths import REPO

FIXTURES = REPO / "tests/passes/mesh_partition/fixtures"
PROGRAMS = ("megatron_mlp", "row_sum", "contraction_matmul", "attention_qkv", "dp_train_step",
            "fsdp_train_step", "constrained_mlp")


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
