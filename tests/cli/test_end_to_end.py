"""The command line as a user runs it: compile, run, inspect-neff, list-operators."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tests.cli_helpers import MODELS, REPO, assert_one_line_error, neuronx_cc


@pytest.fixture(scope="module")
def mlp_neff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("neff") / "mlp.neff"
    r = neuronx_cc("compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn1",
                   "--output", str(out), "--logfile", str(out.with_suffix(".log")))
    assert r.returncode == 0, r.stderr
    assert "Compiler status PASS" in r.stdout
    return out


def test_compile_run_matches_onnxruntime(mlp_neff: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = neuronx_cc("run", str(mlp_neff), "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    assert "y: float32[4, 10]" in r.stdout
    got = np.load(tmp_path / "out.npz")["y"]
    ref = ort.InferenceSession(str(MODELS / "mlp_ts17.onnx")).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_inspect_json_lists_what_run_accepts(mlp_neff: Path, tmp_path: Path) -> None:
    r = neuronx_cc("inspect-neff", str(mlp_neff), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["inputs"] == [{"name": "x", "dtype": "float32", "shape": [4, 16]}]
    assert info["outputs"] == [{"name": "y", "dtype": "float32", "shape": [4, 10]}]
    assert info["header"]["header_size"] == 1024
    assert info["header"]["lnc_size"] == 1
    assert info["hash_ok"] is True
    assert info["subgraphs"][0]["name"] == "sg00" and info["subgraphs"][0]["ops"] > 0
    # The names inspect lists are the ones run accepts and produces.
    inputs = {t["name"]: np.zeros(t["shape"], t["dtype"]) for t in info["inputs"]}
    np.savez(tmp_path / "in.npz", **inputs)
    r = neuronx_cc("run", str(mlp_neff), "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"), "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(np.load(tmp_path / "out.npz").files) == [t["name"] for t in info["outputs"]]


def test_inspect_text(mlp_neff: Path) -> None:
    r = neuronx_cc("inspect-neff", str(mlp_neff))
    assert r.returncode == 0, r.stderr
    for fragment in ("target          trn1", "x: float32[4, 16]", "sg00 (core 0)", "OK"):
        assert fragment in r.stdout


def test_flipped_payload_byte_refused_only_with_validate_hash(mlp_neff: Path, tmp_path: Path
                                                              ) -> None:
    bad = tmp_path / "bad.neff"
    out = tmp_path / "o.npz"
    r = neuronx_cc("compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn1",
                   "--output", str(bad), "--enable-fast-loading-neuron-binaries",
                   "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    data = bytearray(bad.read_bytes())
    # Flip a byte inside a weight file's data (the payload is an uncompressed tar).
    data[len(data) - 3000] ^= 0x01
    bad.write_bytes(bytes(data))
    np.savez(tmp_path / "in.npz", x=np.zeros((4, 16), np.float32))
    r = neuronx_cc("run", str(bad), "--inputs", str(tmp_path / "in.npz"), "--output", str(out),
                   env={"NEURON_RT_VALIDATE_HASH": "true"})
    assert_one_line_error(r, "hash mismatch")
    r = neuronx_cc("run", str(bad), "--inputs", str(tmp_path / "in.npz"), "--output", str(out),
                   "-q", env={"NEURON_RT_VALIDATE_HASH": "false"})
    assert r.returncode == 0, r.stderr


def test_truncated_and_bad_header_neffs_are_refused(mlp_neff: Path, tmp_path: Path) -> None:
    data = mlp_neff.read_bytes()
    cases = {
        "truncated.neff": (data[: len(data) - 10], "truncated"),
        "short.neff": (data[:500], "shorter than the 1024-byte header"),
        "major.neff": (data[:24] + (99).to_bytes(8, "little") + data[32:], "version"),
        "lnc.neff": (data[:552] + (99).to_bytes(4, "little") + data[556:], "lnc_size 99"),
    }
    for name, (content, fragment) in cases.items():
        (tmp_path / name).write_bytes(content)
        r = neuronx_cc("inspect-neff", str(tmp_path / name))
        assert_one_line_error(r, name, fragment)


@pytest.mark.parametrize("lnc_args", [["-lnc", "2"], []], ids=["lnc2", "trn2-default"])
def test_trn2_lnc2_shards_over_two_cores_and_runs(lnc_args: list[str], tmp_path: Path) -> None:
    out = tmp_path / "mlp2.neff"
    r = neuronx_cc("compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn2", *lnc_args,
                   "--output", str(out), "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    info = json.loads(neuronx_cc("inspect-neff", str(out), "--json").stdout)
    assert info["header"]["lnc_size"] == 2 and info["header"]["num_tpb"] == 1  # logical
    assert [sg["name"] for sg in info["subgraphs"]] == ["sg00", "sg01"]
    assert info["subgraphs"][0]["flops"] == info["subgraphs"][1]["flops"] > 0
    assert [c["kind"] for c in info["collectives"]] == ["all_reduce"]
    c = info["collectives"][0]
    assert c["replica_groups"] == [[0, 1]] and c["bytes"] == 4 * 10 * 4 and c["dtype"] == "f32"
    assert "algorithm" not in c
    assert info["communication"]["bytes_per_execution"] == 2 * 160
    text = neuronx_cc("inspect-neff", str(out)).stdout
    assert "sg01 (core 1)" in text and "all_reduce sum" in text and "FLOPs" in text
    dot = neuronx_cc("inspect-neff", str(out), "--format", "dot").stdout
    assert dot.startswith("digraph") and "cluster_sg01" in dot and "fillcolor" in dot
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = neuronx_cc("run", str(out), "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"), "-q")
    assert r.returncode == 0, r.stderr
    ref = ort.InferenceSession(str(MODELS / "mlp_ts17.onnx")).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], ref, rtol=1e-4, atol=1e-5)


def test_print_ir_after_a_sharding_pass(tmp_path: Path) -> None:
    r = neuronx_cc("compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn2", "-lnc", "2",
                   "--output", str(tmp_path / "m.neff"), "--print-ir-after", "shard-partition",
                   "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    assert "// -----// IR after shard-partition //----- //" in r.stdout
    assert "all_reduce(" in r.stdout and "partition_id()" in r.stdout


def test_print_ir_after_a_pass_that_does_not_run_warns(tmp_path: Path) -> None:
    r = neuronx_cc("compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn1",
                   "--output", str(tmp_path / "m.neff"), "--print-ir-after", "shard-partition",
                   "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    assert "IR after" not in r.stdout
    assert "--print-ir-after shard-partition: not run for these options" in r.stderr


def test_list_operators() -> None:
    r = neuronx_cc("list-operators", "--framework", "ONNX")
    assert r.returncode == 0
    ops = r.stdout.split()
    for op in ("Conv", "Gemm", "Softmax", "MaxPool", "BatchNormalization", "Erf"):
        assert op in ops


@pytest.mark.parametrize("command", ["compile", "run", "inspect-neff", "list-operators"])
def test_help_on_every_command(command: str) -> None:
    r = neuronx_cc(command, "--help")
    assert r.returncode == 0 and "Usage:" in r.stdout


def test_version() -> None:
    r = neuronx_cc("--version")
    assert r.returncode == 0
    assert re.fullmatch(r"NeuronX Compiler version \d+\.\d+\.\d+\+nxcc\n", r.stdout)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["compile", "tests/e2e/models/mlp_ts17.onnx", "--target", "trn9"], ["NCC_EARG001", "trn9"]),
        (["compile", "tests/e2e/models/mlp_ts17.onnx", "--target", "trn1", "-lnc", "2"],
         ["NCC_EARG001", "only supported for --target trn2"]),
        (["compile", "nope.onnx", "--target", "trn1"], ["does not exist"]),
        (["compile", "tests/e2e/models/mlp_dynbatch_ts17.onnx", "--target", "trn1"],
         ["NCC_EMOD025", "'x'", "--input-shape"]),
        (["compile", "tests/e2e/models/mlp_ts17.onnx", "--target", "trn1", "--input-shape", "x=a"],
         ["NCC_EARG001", "--input-shape"]),
        (["compile", "tests/e2e/models/mlp_ts17.onnx", "--target", "trn1", "--print-ir-after",
          "nosuchpass"], ["nosuchpass", "no such pass"]),
        (["compile", "README.md", "--target", "trn1"], ["--framework"]),
        (["run", "nope.neff"], ["nope.neff"]),
        (["frobnicate"], ["No such command"]),
    ],
)
def test_user_mistakes_end_in_one_line(args: list[str], fragments: list[str],
                                       tmp_path: Path) -> None:
    r = neuronx_cc(*args, "--logfile", str(tmp_path / "log")) if args[0] == "compile" else \
        neuronx_cc(*args)
    assert_one_line_error(r, *fragments)


def test_compile_failure_leaves_no_file_and_keeps_an_existing_one(tmp_path: Path) -> None:
    target = tmp_path / "keep.neff"
    target.write_bytes(b"precious")
    r = neuronx_cc("compile", "tests/e2e/models/mlp_dynbatch_ts17.onnx", "--target", "trn1",
                   "--output", str(target), "--logfile", str(tmp_path / "log"))
    assert r.returncode != 0
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.neff", "log"]


def test_input_shape_resolves_a_dynamic_batch(tmp_path: Path) -> None:
    out = tmp_path / "dyn.neff"
    r = neuronx_cc("compile", "tests/e2e/models/mlp_dynbatch_ts17.onnx", "--target", "trn1",
                   "--input-shape", "x=7,16", "--output", str(out),
                   "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(2).standard_normal((7, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = neuronx_cc("run", str(out), "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"), "-q")
    assert r.returncode == 0, r.stderr
    ref = ort.InferenceSession(str(MODELS / "mlp_dynbatch_ts17.onnx")).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], ref, rtol=1e-4, atol=1e-5)


def test_print_ir_after_and_debug_timings(tmp_path: Path) -> None:
    r = neuronx_cc("compile", "tests/e2e/models/mlp_ts17.onnx", "--target", "trn1",
                   "--output", str(tmp_path / "m.neff"), "--print-ir-after", "fold",
                   "--verbose", "debug", "--logfile", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    assert "// -----// IR after fold //----- //" in r.stdout
    assert "dot_general" in r.stdout
    assert "pass fold" in r.stderr and " ms " in r.stderr
    assert "pass fold" in (tmp_path / "log").read_text()


def test_wrong_input_name_is_one_line(mlp_neff: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", wrong=np.zeros((4, 16), np.float32))
    r = neuronx_cc("run", str(mlp_neff), "--inputs", str(tmp_path / "in.npz"))
    assert_one_line_error(r, "EXEC_BAD_INPUT", "wrong")


@pytest.mark.skipif(shutil.which("neuronx-cc") is None,
                    reason="the console script exists only when nxcc is pip-installed")
def test_console_script_is_installed() -> None:
    import subprocess

    r = subprocess.run(["neuronx-cc", "--version"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0 and "nxcc" in r.stdout
