"""The Python API raises the `nxcc.Error` family, with the code, the line and the exit
status the command line gives the same mistake."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from onnx import TensorProto, helper

import nxcc
from nxcc.cli.errors import error_text
from tests.inprocess import assert_clean_error, run_cli
from tests.python_api.conftest import EXAMPLES

MLP = str(EXAMPLES / "mlp.onnx")


def same_as_cli(call: Callable[[], object], *argv: str) -> nxcc.Error:
    """The error `call` raises, checked against what `neuronx-cc ARGV` prints and exits."""
    with pytest.raises(nxcc.Error) as raised:
        call()
    err = raised.value
    outcome = run_cli(*argv)
    line = assert_clean_error(outcome)
    assert line == "ERROR: " + error_text(err.report())[0]
    assert outcome.status == err.exit_status
    return err


def test_compile_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "x.neff")
    err = same_as_cli(lambda: nxcc.compile("no/such.onnx", target="trn1"),
                      "compile", "no/such.onnx", "--target", "trn1", "-o", out)
    assert isinstance(err, nxcc.CompileError) and (err.code, err.exit_status) == ("NCC_EARG001", 2)
    err = same_as_cli(lambda: nxcc.compile(MLP, target="trn1", lnc=2),
                      "compile", MLP, "--target", "trn1", "--lnc", "2", "-o", out)
    assert "only supported for --target trn2" in str(err)
    graph = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="acme")],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("acme", 1)])
    path = tmp_path / "acme.onnx"
    path.write_bytes(model.SerializeToString())
    err = same_as_cli(lambda: nxcc.compile(model, target="trn1", no_cache=True),
                      "compile", str(path), "--target", "trn1", "-o", out)
    assert (err.code, err.exit_status) == ("NCC_EUOC002", 1)
    hlo = tmp_path / "bad.hlo"
    hlo.write_text("HloModule m\nENTRY main {\n  ROOT x = f32[2] parameter(0\n}\n")
    err = same_as_cli(lambda: nxcc.compile(hlo, target="trn1"),
                      "compile", str(hlo), "--target", "trn1", "-o", out)
    assert err.code == "NCC_EFRM001" and isinstance(err, nxcc.CompileError)


def test_flags_are_checked_by_name_and_type() -> None:
    with pytest.raises(nxcc.CompileError, match="unknown flag 'optlvl'; the nearest is "
                                               "'optlevel'") as err:
        nxcc.compile(MLP, target="trn1", optlvl=1)
    assert err.value.code == "NCC_EARG001"
    with pytest.raises(nxcc.CompileError, match="auto_cast_typ.*'auto_cast_type'"):
        nxcc.compile(MLP, target="trn1", auto_cast_typ="bf16")
    with pytest.raises(nxcc.CompileError, match="expected an integer"):
        nxcc.compile(MLP, target="trn1", optlevel="fast")
    with pytest.raises(nxcc.CompileError, match="-O 4 is not one of 1, 2, 3"):
        nxcc.compile(MLP, target="trn1", optlevel=4)
    with pytest.raises(nxcc.CompileError, match="flag loss needs training=True"):
        nxcc.compile(MLP, target="trn1", loss="mse")
    with pytest.raises(nxcc.CompileError, match="'nxcc' logger"):
        nxcc.compile(MLP, target="trn1", verbose="info")
    with pytest.raises(nxcc.CompileError, match="cannot compile a dict"):
        nxcc.compile({}, target="trn1")


def test_load_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    garbage = tmp_path / "garbage.neff"
    garbage.write_bytes(b"not a neff")
    err = same_as_cli(lambda: nxcc.load(garbage), "run", str(garbage))
    assert isinstance(err, nxcc.NeffError) and err.code == "NRT_INVALID"
    neff = tmp_path / "mlp.neff"
    nxcc.compile(MLP, target="trn1", output=neff)
    data = bytearray(neff.read_bytes())
    struct.pack_into("<Q", data, 24, 7)  # the header's major version
    newer = tmp_path / "newer.neff"
    newer.write_bytes(bytes(data))
    err = same_as_cli(lambda: nxcc.load(newer), "run", str(newer))
    assert err.code == "NRT_UNSUPPORTED_NEFF_VERSION"
    with pytest.raises(nxcc.NeffError) as refused:
        nxcc.load(bytes(data))
    assert refused.value.code == "NRT_UNSUPPORTED_NEFF_VERSION"
    assert str(refused.value).startswith("<memory>: unsupported NEFF major version 7")
    monkeypatch.setenv("NEURON_RT_EXEC_TIMEOUT", "soon")
    err = same_as_cli(lambda: nxcc.load(neff), "run", str(neff))
    assert isinstance(err, nxcc.NrtError) and err.code == "NRT_INVALID"
    assert "NEURON_RT_EXEC_TIMEOUT" in str(err)
    monkeypatch.delenv("NEURON_RT_EXEC_TIMEOUT")
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    lnc2 = tmp_path / "lnc2.neff"
    nxcc.compile(MLP, target="trn2", output=lnc2)
    err = same_as_cli(lambda: nxcc.load(lnc2), "run", str(lnc2))
    assert isinstance(err, nxcc.NrtError)


def test_train_errors(tmp_path: Path) -> None:
    config = EXAMPLES / "train" / "megatron_gpt_tiny.yaml"
    err = same_as_cli(lambda: nxcc.train(config, ["trainer.devices=many"], dry_run=True),
                      "train", str(config), "trainer.devices=many", "--dry-run")
    assert (err.code, err.exit_status) == ("NCC_ETRN001", 2)
    assert isinstance(err, nxcc.CompileError)
