"""Malformed ONNX models are refused by `neuronx-cc compile` with one line on stderr
(NCC_EFRM001), a non-zero exit and no NEFF: not a protobuf, a cycle, a value nothing
defines, initializers whose data does not fill their shape. A graph that is only out of
order is sorted and compiles."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.cli_helpers import assert_one_line_error, neuronx_cc


def _model(nodes: list[onnx.NodeProto], inits: list[TensorProto] | None = None,
           x_shape: tuple[int, ...] = (2, 3), y_shape: tuple[int, ...] = (2, 4)
           ) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weight(raw: bytes | None = None, floats: list[float] | None = None) -> TensorProto:
    """A [3, 4] float initializer 'w' holding the given (possibly wrong-sized) data."""
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend([3, 4])
    if raw is not None:
        w.raw_data = raw
    else:
        w.float_data.extend(floats or [])
    return w


def not_protobuf(path: Path) -> None:
    path.write_bytes(b"this is not an ONNX protobuf \x00\x01\x02\xff")


def cycle(path: Path) -> None:
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second"),
             helper.make_node("MatMul", ["x", "b"], ["y"], name="last")]
    onnx.save(_model(nodes), path)


def missing_input(path: Path) -> None:
    onnx.save(_model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
                     y_shape=(2, 3)), path)


def raw_too_short(path: Path) -> None:
    w = _weight(raw=np.zeros(5, np.float32).tobytes())
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [w]), path)


def raw_too_long(path: Path) -> None:
    w = _weight(raw=np.zeros(15, np.float32).tobytes())
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [w]), path)


def raw_not_whole_elements(path: Path) -> None:
    w = _weight(raw=np.zeros(12, np.float32).tobytes() + b"\x00")
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [w]), path)


def typed_data_too_short(path: Path) -> None:
    w = _weight(floats=[1.0] * 5)
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [w]), path)


CASES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "not_protobuf": (not_protobuf, ["cannot parse it as an ONNX protobuf"]),
    "cycle": (cycle, ["cycle", "'first'", "'second'"]),
    "missing_input": (missing_input, ["'add'", "'nowhere'", "no node"]),
    "raw_too_short": (raw_too_short, ["initializer 'w'", "20 bytes", "needs 48"]),
    "raw_too_long": (raw_too_long, ["initializer 'w'", "60 bytes", "needs 48"]),
    "raw_not_whole_elements": (raw_not_whole_elements, ["initializer 'w'", "49 bytes"]),
    "typed_data_too_short": (typed_data_too_short, ["initializer 'w'", "[3, 4]"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_model_is_one_line_error(case: str, tmp_path: Path) -> None:
    make, fragments = CASES[case]
    model, out = tmp_path / "bad.onnx", tmp_path / "bad.neff"
    make(model)
    result = neuronx_cc("compile", str(model), "--target", "trn1", "--output", str(out),
                        cwd=tmp_path)
    assert_one_line_error(result, "NCC_EFRM001", *fragments)
    assert not out.exists()


def test_out_of_order_nodes_are_sorted(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])]
    model, out = tmp_path / "unsorted.onnx", tmp_path / "unsorted.neff"
    onnx.save(_model(nodes, y_shape=(2, 3)), model)
    result = neuronx_cc("compile", str(model), "--target", "trn1", "--output", str(out),
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert out.exists()
