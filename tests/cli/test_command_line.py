"""The real tool's command lines, run as build pipelines run them."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from nxcc.cli.compile_args import split_compile_args
from nxcc.cli.global_options import move_after_command
from nxcc.cli.progress import ProgressLine
from tests.cli_helpers import MODELS, assert_one_line_error, neuronx_cc
from tests.paths import REPO

DATA = REPO / "tests/driver/data"


def manifest(neff: Path) -> dict:
    r = neuronx_cc("inspect-neff", str(neff), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_libneuronxla_command_line(tmp_path: Path) -> None:
    """Global option before the subcommand, --verbose as a number (binary protos arrive with
    the HLO proto reader; the same line on HLO text)."""
    model = tmp_path / "model.MODULE_123.hlo"
    shutil.copy(DATA / "matmul.hlo", model)
    r = neuronx_cc("--target=trn1", "compile", "--framework", "XLA", str(model), "--output",
                   str(tmp_path / "model.neff"), "--verbose=35", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and "Compiler status PASS" in r.stdout
    assert manifest(tmp_path / "model.neff")["target"] == "trn1"


def test_binary_proto_routes_to_xla_in_one_line(tmp_path: Path) -> None:
    model = tmp_path / "model.MODULE_123.hlo.pb"
    shutil.copy(DATA / "matmul.hlo.pb", model)
    r = neuronx_cc("--target=trn1", "compile", "--framework", "XLA", str(model), "--output",
                   str(tmp_path / "model.neff"), "--verbose=35", cwd=tmp_path)
    if r.returncode != 0:  # no proto reader in this build: one clean line
        line = assert_one_line_error(r, "NCC_EARG001", "HloModuleProto")
        assert "codec" not in line


def test_optimum_neuron_command_line(tmp_path: Path) -> None:
    shutil.copy(DATA / "matmul.hlo", tmp_path / "file.hlo")
    r = neuronx_cc(
        "compile", "--framework=XLA", "--target=trn2", "--auto-cast=none",
        "--model-type=transformer", "--distribution-strategy=llm-training",
        "--enable-saturate-infinity", "--enable-mixed-precision-accumulation", "-O1", "--lnc=2",
        "--logfile=log.txt", "--pipeline", "compile", "SaveTemps", "file.hlo",
        "--output", "file.neff", "--workdir", "work",
        "--internal-hlo2tensorizer-options=--verify-hlo=true",
        "--tensorizer-options", "--enable-ccop-compute-overlap --cc-pipeline-tiling-factor=2",
        "--no-internal-hlo-remat", "--internal-enable-dge-levels", "vector_dynamic_offsets",
        cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = manifest(tmp_path / "file.neff")
    flags = m["compiler"]["flags"]
    assert (m["lnc"], flags["optlevel"], flags["model_type"]) == (2, 1, "transformer")
    assert flags["saturate_infinity"] and flags["distribution_strategy"] == "llm-training"
    assert flags["recorded"] == [
        ["--internal-enable-dge-levels", "vector_dynamic_offsets"],
        ["--internal-hlo2tensorizer-options", "--verify-hlo=true"],
        ["--no-internal-hlo-remat", None],
        ["--tensorizer-options", "--enable-ccop-compute-overlap --cc-pipeline-tiling-factor=2"],
    ]
    assert "pass saturate-infinity" in (tmp_path / "log.txt").read_text()
    work = sorted(p.name for p in (tmp_path / "work").iterdir())
    assert work == ["00-frontend.ir", "01-saturate-infinity.ir", "02-fold.ir", "03-dce.ir",
                    "04-latency-hiding.ir",
                    "compile_flags.json", "neff.json", "sg00.ir", "sg01.ir"]
    assert json.loads((tmp_path / "work" / "neff.json").read_text())["lnc"] == 2


@pytest.mark.parametrize("level", ["debug", "INFO", "warn", "10", "35", "50"])
def test_verbose_takes_names_and_numbers(level: str, tmp_path: Path) -> None:
    r = neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1", "--verbose",
                   level, "-o", str(tmp_path / "m.neff"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("INFO:" in r.stderr) == (level.lower() in ("debug", "info", "10"))


def test_verbose_refuses_other_words(tmp_path: Path) -> None:
    r = neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1",
                   "--verbose", "loud", cwd=tmp_path)
    assert_one_line_error(r, "NCC_EARG001", "'loud' is not a level")
    assert r.returncode == 2


def test_global_options_are_moved_after_the_subcommand() -> None:
    commands = {"compile", "run"}
    assert move_after_command(["--target", "trn1", "-O1", "compile", "m.hlo", "-O2"],
                              commands) == ["compile", "--target", "trn1", "-O1", "m.hlo", "-O2"]
    assert move_after_command(["--version"], commands) == ["--version"]
    assert move_after_command(["compile", "--target=trn1"], commands) == [
        "compile", "--target=trn1"]


def test_recorded_flags_and_pipeline_are_split_from_clicks_arguments() -> None:
    rest, stages, recorded = split_compile_args(
        ["--pipeline", "compile", "SaveTemps", "m.hlo", "--internal-foo", "--internal-x=1",
         "--internal-compiler-debug-mode", "all", "-O1"])
    assert rest == ["m.hlo", "-O1"]
    assert stages == ["compile", "SaveTemps"]
    assert recorded == [("--internal-foo", None), ("--internal-x", "1"),
                        ("--internal-compiler-debug-mode", "all")]


def test_every_documented_flag_is_accepted(tmp_path: Path) -> None:
    r = neuronx_cc(
        "compile", str(DATA / "matmul.hlo"), "--framework", "XLA", "--target", "trn1",
        "--model-type", "unet-inference", "--auto-cast", "all", "--auto-cast-type", "fp16",
        "--native-int64", "enabled", "--implicit-integer-downcast", "dot,pow",
        "--distribution-strategy", "NEMO", "--logical-nc-config", "1", "--optlevel", "3",
        "--disable-mixed-precision-accumulation", "--enable-saturate-infinity",
        "--enable-fast-context-switch", "--enable-fast-loading-neuron-binaries",
        "--logfile", str(tmp_path / "l.txt"), "--output", str(tmp_path / "o.neff"),
        "--verbose", "warning", "--jobs", "4", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    flags = manifest(tmp_path / "o.neff")["compiler"]["flags"]
    assert flags["distribution_strategy"] == "llm-training" and flags["fast_loading"]
    assert flags["auto_cast_type"] == "fp16" and not flags["mixed_precision_accumulation"]


def test_auto_cast_bf16_changes_a_model_within_bf16_error(tmp_path: Path) -> None:
    model = MODELS / "mlp_ts17.onnx"
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x)  # positional: arr_0
    ref = ort.InferenceSession(str(model)).run(None, {"x": x})[0]
    outs = {}
    for cast in ("none", "matmult"):
        neff = tmp_path / f"{cast}.neff"
        r = neuronx_cc("compile", str(model), "--target", "trn1", f"--auto-cast={cast}",
                       "--auto-cast-type=bf16", "-o", str(neff), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "in.npz"), "-q",
                       "--output", str(tmp_path / f"{cast}.npz"))
        assert r.returncode == 0, r.stderr
        outs[cast] = np.load(tmp_path / f"{cast}.npz")["y"]
    np.testing.assert_allclose(outs["none"], ref, rtol=1e-5, atol=1e-5)
    assert not np.allclose(outs["matmult"], ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs["matmult"], ref, rtol=2**-6, atol=2**-6)


def test_saturate_infinity_end_to_end(tmp_path: Path) -> None:
    np.savez(tmp_path / "big.npz", np.full((4, 8), 300, np.float32),
             np.full((8, 3), 300, np.float32))
    results = {}
    for extra in ((), ("--enable-saturate-infinity",)):
        neff = tmp_path / f"s{len(extra)}.neff"
        r = neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1",
                       "--auto-cast", "matmult", "--auto-cast-type", "fp16",
                       "--disable-mixed-precision-accumulation", *extra, "-o", str(neff),
                       cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        out = tmp_path / f"s{len(extra)}.npz"
        r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "big.npz"), "-q",
                       "--output", str(out))
        assert r.returncode == 0, r.stderr
        results[len(extra)] = next(iter(np.load(out).values()))
    assert np.all(np.isinf(results[0]))
    np.testing.assert_array_equal(results[1], np.float32(65504))


@pytest.mark.parametrize(("args", "status", "fragments"), [
    (["compile", "nope.onnx", "--target", "trn1"], 2, ["NCC_EARG001", "does not exist"]),
    (["compile", str(MODELS / "mlp_ts17.onnx"), "--target", "trn1", "--bogus"], 2,
     ["NCC_EARG001", "--bogus"]),
    (["compile", str(DATA / "matmul.hlo"), "--target", "trn1", "--framework", "ONNX"], 2,
     ["NCC_EARG001", "looks like XLA HLO text"]),
    (["compile", str(DATA / "matmul.hlo"), "--target", "trn1", "--pipeline", "Link"], 2,
     ["NCC_EARG001", "--pipeline 'Link'"]),
    (["inspect-neff", "missing.neff"], 1, ["[NRT_INVALID]", "missing.neff"]),
    (["run", "missing.neff"], 1, ["[NRT_INVALID]"]),
])
def test_exit_statuses_and_codes(args: list[str], status: int, fragments: list[str],
                                 tmp_path: Path) -> None:
    r = neuronx_cc(*args, cwd=tmp_path)
    assert_one_line_error(r, *fragments)
    assert r.returncode == status


def test_unsupported_operator_is_a_compile_error_with_status_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text((DATA / "matmul.hlo").read_text().replace(" dot(", " frobnicate("))
    r = neuronx_cc("compile", str(bad), "--target", "trn1", cwd=tmp_path)
    assert r.returncode == 1 and "ERROR: [NCC_E" in r.stderr


def test_run_positional_npz_and_mismatched_count(tmp_path: Path) -> None:
    neff = tmp_path / "m.neff"
    assert neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1", "-o",
                      str(neff), cwd=tmp_path).returncode == 0
    a, b = np.ones((4, 8), np.float32), np.full((8, 3), 2, np.float32)
    np.savez(tmp_path / "two.npz", a, b)
    r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "two.npz"), "-q",
                   "--output", str(tmp_path / "o.npz"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(next(iter(np.load(tmp_path / "o.npz").values())), 16.0)
    np.savez(tmp_path / "one.npz", a)
    r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "one.npz"))
    assert_one_line_error(r, "NRT_")
    assert r.returncode == 1


def test_progress_line_shows_the_stage_and_time_then_clears() -> None:
    stream = io.StringIO()
    with ProgressLine(stream, delay=0.05, interval=0.02, force=True) as progress:
        progress.stage("fold")
        time.sleep(0.2)
    text = stream.getvalue()
    assert "neuronx-cc: fold ... " in text and text.endswith("\r\x1b[K")
    assert "\n" not in text


def test_no_progress_when_not_a_terminal(tmp_path: Path) -> None:
    stream = io.StringIO()
    with ProgressLine(stream, delay=0.0, interval=0.01) as progress:
        progress.stage("fold")
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_compile_on_a_terminal_shows_the_running_stage(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    from tests.cli_helpers import REPO

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NXCC_PROGRESS_DELAY": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nxcc", "compile", str(MODELS / "cnn_bn_ts17.onnx"),
         "--target", "trn1", "--no-cache", "-o", str(tmp_path / "m.neff")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0 and b"Compiler status PASS" in out
    assert b"neuronx-cc: import ... " in seen and seen.endswith(b"\r\x1b[K")
