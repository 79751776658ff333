"""`nxcc.compile` and `nxcc.load` end to end: the bundled examples compiled and run from
Python give what `neuronx-cc compile` + `neuronx-cc run` give, and the input and output
rules hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxcc
from tests.inprocess import run_cli
from tests.paths import REPO
from tests.python_api.conftest import EXAMPLES


def npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as d:
        return {k: d[k] for k in d.files}


def cli_run(neff: Path, inputs: Path, tmp_path: Path) -> dict[str, np.ndarray]:
    out = tmp_path / "cli-out.npz"
    outcome = run_cli("run", str(neff), "--inputs", str(inputs), "--output", str(out), "-q")
    assert outcome.status == 0, outcome.stderr
    return npz(out)


@pytest.mark.parametrize("name,target", [("mlp", "trn1"), ("cnn", "trn1"), ("cnn", "trn2")])
def test_examples_run_as_the_command_line_runs_them(name: str, target: str,
                                                    tmp_path: Path) -> None:
    model, inputs = EXAMPLES / f"{name}.onnx", EXAMPLES / f"{name}_inputs.npz"
    cli_neff = tmp_path / "cli.neff"
    outcome = run_cli("compile", str(model), "--target", target, "--output", str(cli_neff))
    assert outcome.status == 0, outcome.stderr
    neff = nxcc.compile(str(model), target=target, output=tmp_path / "api.neff")
    assert neff.to_bytes() == cli_neff.read_bytes()  # same flags, same bytes
    expected = cli_run(cli_neff, inputs, tmp_path)
    with nxcc.load(nxcc.compile(model, target=target)) as loaded:
        outputs = loaded(**npz(inputs))
        assert loaded.is_root and not loaded.closed
    assert list(outputs) == list(expected)  # the npz's order: the NEFF's output order
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value)


def _two_outputs() -> onnx.ModelProto:
    """z = relu(x) and a = x + y, declared in the order z, a."""
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xy")
    nodes = [helper.make_node("Relu", ["x"], ["z"]), helper.make_node("Add", ["x", "y"], ["a"])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "za"]
    graph = helper.make_graph(nodes, "two_outputs", [x, y], outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_inputs_in_order_or_by_name_and_outputs_in_the_neffs_order() -> None:
    proto = _two_outputs()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    y = np.ones((2, 3), np.float32)
    with nxcc.load(nxcc.compile(proto, target="trn1")) as model:
        assert [i.name for i in model.inputs] == ["x", "y"]
        assert [o.name for o in model.outputs] == ["z", "a"]
        results = [model(x, y), model(x, y=y), model(y=y, x=x)]
        with pytest.raises(nxcc.NrtError) as twice:
            model(x, x=x, y=y)
        with pytest.raises(nxcc.NrtError) as many:
            model(x, y, y)
        with pytest.raises(nxcc.NrtError) as missing:
            model(x)
    for out in results:
        assert list(out) == ["z", "a"]
        np.testing.assert_array_equal(out["z"], np.maximum(x, 0))
        np.testing.assert_array_equal(out["a"], x + y)
    for err in (twice.value, many.value, missing.value):
        assert err.code == "NRT_EXEC_BAD_INPUT" and err.report().startswith("[NRT_EXEC_BAD")
    assert "'x' given both" in str(twice.value) and "3 arrays given" in str(many.value)


def test_a_model_given_as_bytes_proto_or_text_compiles_as_its_file(tmp_path: Path) -> None:
    mlp = EXAMPLES / "mlp.onnx"
    inputs = npz(EXAMPLES / "mlp_inputs.npz")
    hlo = REPO / "tests/passes/mesh_partition/fixtures/row_sum.lowered.hlo"
    sources = {"path": str(mlp), "pathlike": mlp, "bytes": mlp.read_bytes(),
               "proto": onnx.load(str(mlp))}
    outputs = {}
    for kind, source in sources.items():
        with nxcc.load(nxcc.compile(source, target="trn1")) as model:
            outputs[kind] = model(**inputs)["y"]
    for kind in sources:
        np.testing.assert_array_equal(outputs[kind], outputs["path"])
    text = nxcc.compile(hlo.read_text(), target="trn1")
    from_file = nxcc.compile(hlo, target="trn1")
    assert text.to_bytes()[1024:] != b"" and text.header.name == "model"
    assert nxcc.inspect(text)["inputs"] == nxcc.inspect(from_file)["inputs"]


def test_the_neff_in_memory_and_saved(tmp_path: Path) -> None:
    neff = nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1")
    assert neff.temporary and "temporary" in repr(neff)
    saved = neff.save(tmp_path / "kept.neff")
    assert saved.path == str(tmp_path / "kept.neff") and not saved.temporary
    data = saved.to_bytes()
    assert data == neff.to_bytes() and neff.header.name == "mlp"
    from_bytes = nxcc.Neff(data=data)
    with nxcc.load(from_bytes) as model:
        assert model.source == "<memory>" and model.name == "mlp"
    with nxcc.load(data) as model, nxcc.load(str(saved.path)) as again:
        assert again.source == saved.path and model.name == again.name


def test_a_path_compiles_through_the_compile_cache(tmp_path: Path) -> None:
    mlp = str(EXAMPLES / "mlp.onnx")
    cache = tmp_path / "cache"
    nxcc.compile(mlp, target="trn1", cache_dir=str(cache), output=tmp_path / "a.neff")
    entries = sorted(p.name for p in cache.rglob("*") if p.is_dir() and "MODULE_" in p.name)
    assert len(entries) == 1
    outcome = run_cli("compile", mlp, "--target", "trn1", "--cache-dir", str(cache),
                      "--output", str(tmp_path / "b.neff"), "--verbose", "info")
    assert outcome.status == 0 and "compile cache hit" in outcome.stderr, outcome.stderr
    nxcc.compile(mlp, target="trn1", no_cache=True, cache_dir=str(tmp_path / "unused"))
    assert not (tmp_path / "unused").exists()


def test_flags_in_python_spelling(tmp_path: Path) -> None:
    mlp = str(EXAMPLES / "mlp.onnx")
    neff = nxcc.compile(mlp, target="TRN1", optlevel=1, auto_cast="MATMULT",
                        auto_cast_type="bf16", enable_fast_loading_neuron_binaries=True,
                        internal_hlo2tensorizer_options="--foo", enable_internal_x=True,
                        no_cache=True)
    flags = nxcc.inspect(neff)["compiler"]["flags"]
    assert (flags["optlevel"], flags["auto_cast"], flags["fast_loading"]) == (1, "matmult", True)
    assert flags["recorded"] == [["--enable-internal-x", None],
                                 ["--internal-hlo2tensorizer-options", "--foo"]]
    cli = tmp_path / "cli.neff"
    outcome = run_cli("compile", mlp, "--target", "trn1", "-O", "1", "--auto-cast", "matmult",
                      "--enable-fast-loading-neuron-binaries", "--no-cache",
                      "--internal-hlo2tensorizer-options", "--foo", "--enable-internal-x",
                      "--output", str(cli))
    assert outcome.status == 0, outcome.stderr
    assert nxcc.inspect(cli)["compiler"]["flags"] == flags
