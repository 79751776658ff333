"""Reading a model file (`read_model_file`): what `onnx.load` gives, from a memory map for
binary files, with external data and text formats, and a clear error for a broken file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nxcc.compiler.onnx.errors import FrontendError
from nxcc.compiler.onnx.loader import load_model, read_model_file


def _model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_binary_file_reads_as_onnx_load_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    assert read_model_file(path) == onnx.load(str(path)) == _model()


def test_external_data_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size == 4096 * 4
    got = read_model_file(path)
    w = numpy_helper.to_array(got.graph.initializer[0])
    np.testing.assert_array_equal(w, np.arange(4096, dtype=np.float32).reshape(64, 64))


def test_a_text_format_goes_through_onnx_load(tmp_path: Path) -> None:
    path = tmp_path / "m.textproto"
    onnx.save(_model(), str(path), format="textproto")
    assert read_model_file(path) == _model()


@pytest.mark.parametrize("cut", [1, 37, 200])
def test_a_truncated_file_is_one_clear_error(tmp_path: Path, cut: int) -> None:
    good = tmp_path / "good.onnx"
    onnx.save(_model(), str(good))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(good.read_bytes()[:-cut])
    with pytest.raises(FrontendError, match="is not a valid ONNX model"):
        load_model(str(bad))


def test_an_empty_file_is_one_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(FrontendError, match="is not a valid ONNX model"):
        load_model(str(empty))
