"""ONNX models a fuzzer or a broken exporter hands us end in one coded line, never a
traceback (issue 16): element types ONNX does not define, negative or absurd dimensions
on a graph input, tensors over the size limit. (Cycles and dangling names:
test_malformed.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from nxcc.ir.limits import MAX_TENSOR_BYTES
from tests.inprocess import assert_clean_error, run_cli


def _save(path: Path, x_dims: list, init: TensorProto | None = None) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_dims)],
        [init] if init is not None else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())  # unchecked: as a broken writer would
    return path


def _compile(tmp_path: Path, model: Path) -> str:
    out = tmp_path / "out.neff"
    line = assert_clean_error(run_cli("compile", str(model), "--target", "trn1", "--output",
                                      str(out), "--logfile", str(tmp_path / "log.txt")))
    assert not out.exists()
    return line


@pytest.mark.parametrize("data_type", [77, 45, 33, -1])
def test_initializer_of_an_unknown_element_type(tmp_path: Path, data_type: int) -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    w.data_type = data_type
    line = _compile(tmp_path, _save(tmp_path / "m.onnx", [2, 3], w))
    assert line.startswith("ERROR: [NCC_E")
    assert f"initializer 'w' has element type {data_type}, which ONNX does not define" in line


@pytest.mark.parametrize("dim", [-1, -(1 << 63)])
def test_negative_input_dimension(tmp_path: Path, dim: int) -> None:
    line = _compile(tmp_path, _save(tmp_path / "m.onnx", [2, dim]))
    assert "[NCC_EFRM001]" in line and "negative dimension" in line, line


def test_absurd_input_dimensions(tmp_path: Path) -> None:
    line = _compile(tmp_path, _save(tmp_path / "m.onnx", [1 << 20, 1 << 20, 1 << 20]))
    assert f"over the limit of {MAX_TENSOR_BYTES}" in line, line


def test_negative_initializer_dimension(tmp_path: Path) -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    w.dims[0] = -2
    line = _compile(tmp_path, _save(tmp_path / "m.onnx", [2, 3], w))
    assert "initializer 'w' has a negative dimension" in line, line


def test_oversize_literal_claims_more_than_it_holds(tmp_path: Path) -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    w.ClearField("float_data")
    w.raw_data = np.zeros(4, np.float32).tobytes()
    del w.dims[:]
    w.dims.extend([1 << 40, 1 << 40])
    line = _compile(tmp_path, _save(tmp_path / "m.onnx", [2, 3], w))
    assert "[NCC_EFRM001]" in line and "has 16 bytes of data" in line, line


def test_model_still_compiles(tmp_path: Path) -> None:
    model = _save(tmp_path / "ok.onnx", [2, 3])
    onnx.checker.check_model(onnx.load(str(model)))
    out = run_cli("compile", str(model), "--target", "trn1", "--output",
                  str(tmp_path / "ok.neff"), "--logfile", str(tmp_path / "log.txt"))
    assert out.status == 0, out.stderr
