"""The hostile files of the hardening issue, rebuilt here, through the command line: each
ends in one error line with a code and a non-zero status (or runs correctly when it is
valid), never a traceback, a hang or a MemoryError. (Checkpoints: test_resume_safety.py;
StableHLO: tests/compiler/stablehlo/test_errors.py; runtime limits: tests/driver/.)"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml

from tests.backend.neff.mutants import EXAMPLES, compile_example
from tests.driver.train.train_yaml import LLAMA, variant
from tests.fuzz.npz_hazards import _bzip2_bomb
from tests.inprocess import assert_clean_error, run_cli

LOSS = ["--loss", "cross-entropy", "--loss-input", "y", "--label-input", "labels"]


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def hostile_npz(path: Path, how: str, members: dict[str, np.ndarray]) -> Path:
    """`members` as an .npz written the hostile way `how` says."""
    named = [(f"{k}.npy", npy(v)) for k, v in members.items()]
    if how == "bomb":
        path.write_bytes(_bzip2_bomb(named[0][0]))
        return path
    method = {"lzma": zipfile.ZIP_LZMA, "bzip2": zipfile.ZIP_BZIP2}.get(how, zipfile.ZIP_STORED)
    if how == "trailing":
        named[0] = (named[0][0], named[0][1] + b"\0" * 64)
    if how == "duplicate":
        named.append((named[0][0], named[0][1]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, body in named:
            z.writestr(name, body)
    raw = bytearray(buf.getvalue())
    if how == "encrypted":
        raw[6] |= 1
        raw[raw.find(b"PK\x01\x02") + 8] |= 1
    path.write_bytes(bytes(raw))
    return path


@pytest.fixture(scope="module")
def neffs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """mlp (inference) and its training step, with a state file saved after one step."""
    tmp = tmp_path_factory.mktemp("neffs")
    out = {"mlp": compile_example(tmp / "mlp.neff", "mlp"), "step": tmp / "step.neff",
           "batch": tmp / "batch.npz", "state": tmp / "state.npz"}
    assert run_cli("compile", str(EXAMPLES / "mlp.onnx"), "--target", "trn1", "--training",
                   *LOSS, "--optimizer", "adamw", "--lr", "1e-2", "--output", str(out["step"]),
                   "--no-cache").status == 0
    rng = np.random.default_rng(0)
    np.savez(out["batch"], x=rng.normal(size=(4, 16)).astype(np.float32),
             labels=np.array([1, 2, 3, 4]))
    assert run_cli("run", str(out["step"]), "--inputs", str(out["batch"]), "-q",
                   "--save-state", str(out["state"])).status == 0
    return out


HOW = ["encrypted", "lzma", "bzip2", "bomb", "trailing", "duplicate"]


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("how", HOW)
def test_hostile_inputs_npz(neffs: dict[str, Path], tmp_path: Path, how: str) -> None:
    x = np.ones((4, 16), np.float32)
    bad = hostile_npz(tmp_path / "in.npz", how, {"x": x})
    line = assert_clean_error(run_cli("run", str(neffs["mlp"]), "--inputs", str(bad), "-q"),
                              "NRT_EXEC_BAD_INPUT", "cannot read inputs", str(bad))
    assert {"duplicate": "two members named 'x.npy'", "trailing": "trailing data",
            "encrypted": "encrypted", "lzma": "LZMA"}.get(how, "bzip2") in line


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("how", HOW)
def test_hostile_state_npz(neffs: dict[str, Path], tmp_path: Path, how: str) -> None:
    with np.load(neffs["state"]) as saved:
        arrays = {k: saved[k] for k in saved.files}
    bad = hostile_npz(tmp_path / "state.npz", how, arrays)
    assert_clean_error(run_cli("run", str(neffs["step"]), "--inputs", str(neffs["batch"]),
                               "-q", "--load-state", str(bad)), "cannot read state", str(bad))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "fifo"])
def test_devices_and_fifos(neffs: dict[str, Path], tmp_path: Path, device: str) -> None:
    if device == "fifo":
        device = str(tmp_path / "fifo.npz")
        os.mkfifo(device)
    for flag, neff, extra in (("--inputs", neffs["mlp"], []),
                              ("--load-state", neffs["step"], ["--inputs",
                                                               str(neffs["batch"])])):
        assert_clean_error(run_cli("run", str(neff), *extra, flag, device, "-q"),
                           device, "not a regular file")


def test_big_endian_inputs_run_as_native(neffs: dict[str, Path], tmp_path: Path) -> None:
    x = np.random.default_rng(1).normal(size=(4, 16)).astype(np.float32)
    np.savez(tmp_path / "le.npz", x=x)
    np.savez(tmp_path / "be.npz", x=x.astype(">f4"))
    outs = []
    for name in ("le", "be"):
        result = run_cli("run", str(neffs["mlp"]), "--inputs", str(tmp_path / f"{name}.npz"),
                         "-q", "--output", str(tmp_path / f"{name}.out.npz"))
        assert result.status == 0, result.stderr
        with np.load(tmp_path / f"{name}.out.npz") as out:
            outs.append({k: out[k] for k in out.files})
    for k in outs[0]:
        np.testing.assert_array_equal(outs[0][k], outs[1][k])


@pytest.mark.parametrize("config", ["/dev/zero", "/dev/urandom", "deep", "fifo"])
def test_hostile_model_config(tmp_path: Path, config: str) -> None:
    if config == "deep":
        config = str(tmp_path / "deep.json")
        Path(config).write_text("{\"a\": " * 10_000 + "1" + "}" * 10_000)
    elif config == "fifo":
        config = str(tmp_path / "config.json")
        os.mkfifo(config)
    path = variant(tmp_path, LLAMA, model__model_config=config)
    line = assert_clean_error(run_cli("train", str(path), "--dry-run", "--quiet"),
                              "[NCC_ETRN001] model.model_config:", config)
    assert "not a regular file" in line or "nested 10000 deep" in line


@pytest.mark.parametrize("shape", ["(4611686018427387904,)",
                                   "(1000000000000000000000000000000,)"])
def test_training_npy_with_absurd_shape(tmp_path: Path, shape: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    ids = npy(np.arange(256, dtype=np.int32))
    header = f"{{'descr': '<i4', 'fortran_order': False, 'shape': {shape}, }}"
    body = header.encode() + b" " * (-(len(header) + 11) % 64) + b"\n"
    (data / "ids.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little")
                                   + body + ids[128:])
    tree = yaml.safe_load(variant(tmp_path, LLAMA).read_text())
    tree["data"]["train_dir"] = str(data)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tree))
    assert_clean_error(run_cli("train", str(path), "--quiet", "trainer.max_steps=1"),
                       "data.train_dir", "ids.npy", "dimension over the limit")


def test_training_data_fifo(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.mkfifo(data / "ids.npy")
    tree = yaml.safe_load(variant(tmp_path, LLAMA).read_text())
    tree["data"]["train_dir"] = str(data)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tree))
    assert_clean_error(run_cli("train", str(path), "--quiet", "trainer.max_steps=1"),
                       "data.train_dir", "is a FIFO")


def test_onnx_large_initializer_of_undefined_type(tmp_path: Path) -> None:
    model = onnx.load(str(EXAMPLES / "cnn.onnx"))
    big = max(model.graph.initializer, key=lambda t: np.prod(t.dims))
    big.data_type = onnx.TensorProto.UNDEFINED
    onnx.save(model, str(tmp_path / "undefined.onnx"))
    assert_clean_error(run_cli("compile", str(tmp_path / "undefined.onnx"), "--target",
                               "trn1", "--output", str(tmp_path / "out.neff"), "--no-cache"),
                       "[NCC_EFRM001]", "element type UNDEFINED (0)")
    assert not (tmp_path / "out.neff").exists()
