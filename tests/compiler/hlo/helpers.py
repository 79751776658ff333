"""Shared by the HLO frontend tests: fixtures, their stored arrays, compiling and running."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import ml_dtypes
import numpy as np

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.backend.runtime.nrt import Runtime
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HLO_FIXTURES = sorted(FIXTURES.glob("*.hlo"))


def fixture_arrays(hlo: Path) -> dict[str, np.ndarray]:
    """The inputs and expected outputs stored next to `hlo` (NAME.npz for NAME.*.hlo)."""
    data = np.load(FIXTURES / (hlo.name.split(".")[0] + ".npz"))
    out = {}
    for key in data.files:
        if key.startswith("bf16:"):
            out[key[5:]] = data[key].view(ml_dtypes.bfloat16)
        else:
            out[key] = data[key]
    return out


def compile_and_load(path: Path, out: Path, framework: str | None) -> LoadedModel:
    """The compiled model; a program whose shardings name N devices is partitioned for N
    ranks, and is loaded as them (global inputs in, global outputs out)."""
    compile_model(str(path), CompileOptions(target="trn1", framework=framework,
                                            output=str(out)))
    return load_model(out)


def load_model(neff: Path) -> LoadedModel:
    """`neff` as one model, or as its N ranks when it is an SPMD program (the runtime that
    placed them is closed: the ranks run on their own)."""
    spmd = read_neff(str(neff)).manifest.get("spmd")
    if spmd is None:
        return LoadedModel(read_neff(str(neff)))
    rt = Runtime().init(target="trn1")
    try:
        return rt.load_spmd(neff, spmd["world_size"]).replicas[0].model  # type: ignore
    finally:
        rt.close()


def run_fixture(model: LoadedModel, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on the fixture's inputs (input i is the i-th parameter)."""
    inputs = {info.name: arrays[f"input{i}"] for i, info in enumerate(model.inputs)}
    results = model.execute(inputs)
    return [results[info.name] for info in model.outputs]


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """f32 (and other floats): rtol 1e-5, atol 1e-6; bf16: rtol 2e-2; others exact."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if want.dtype == np.dtype(ml_dtypes.bfloat16):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=2e-2, atol=1e-2, err_msg=what)
    elif want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


#: What a proto's tree and its text's tree may differ in: positions and written text, and
#: the metadata a proto keeps elsewhere.
TREE_SKIP = frozenset({"offset", "opcode_offset", "operands_offset", "raw", "metadata"})


def assert_same_tree(a: object, b: object, path: str = "module",
                     skip: frozenset[str] = frozenset()) -> None:
    """Two syntax trees are equal field by field (numpy literals by value); fields and
    dictionary keys named in `skip` are not compared."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
        for f in dataclasses.fields(a):
            if f.name in ("source", "_starts") or f.name in skip:
                continue
            assert_same_tree(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", skip)
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{path}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{path}[{i}]", skip)
    elif isinstance(a, dict):
        keys_a, keys_b = set(a) - skip, set(b) - skip  # type: ignore[arg-type]
        assert keys_a == keys_b, f"{path}: keys {sorted(keys_a)} vs {sorted(keys_b)}"
        for k in keys_a:
            assert_same_tree(a[k], b[k], f"{path}[{k!r}]", skip)  # type: ignore[index]
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=True), path
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"
