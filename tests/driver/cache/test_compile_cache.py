"""The compile cache as a user meets it: hits, misses, shared by processes, robust to kills."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

DATA = REPO / "tests/driver/data"
RESNET = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def entries(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob("neuronxcc-*/MODULE_*") if p.is_dir())


def compile_hlo(tmp_path: Path, cache: Path, *flags: str, out: str = "m.neff",
                model: Path = DATA / "matmul.hlo") -> subprocess.CompletedProcess[str]:
    return neuronx_cc("compile", str(model), "--target", "trn1", "-o", str(tmp_path / out),
                      "--cache-dir", str(cache), "--verbose", "info", *flags, cwd=tmp_path)


def test_hit_is_byte_identical_and_not_compiled_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = compile_hlo(tmp_path, cache, out="a.neff")
    second = compile_hlo(tmp_path, cache, out="b.neff")
    assert "compile cache miss" in first.stderr and "compile cache hit" in second.stderr
    assert (tmp_path / "a.neff").read_bytes() == (tmp_path / "b.neff").read_bytes()
    (entry,) = entries(cache)
    assert entry.startswith("MODULE_") and "+" in entry
    files = sorted(p.name for p in next(cache.glob(f"neuronxcc-*/{entry}")).iterdir())
    assert files == ["compile_flags.json", "meta.json", "model.hlo", "model.neff"]


def test_flags_are_normalised_and_log_flags_are_not_in_the_key(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    same = [
        (),
        ("-O2", "--lnc=1"),
        ("--logical-nc-config", "1", "--optlevel", "2", "--auto-cast", "none",
         "--auto-cast-type", "fp16"),
        ("--verbose", "debug", "--logfile", str(tmp_path / "other.log"), "--workdir", "w"),
        ("--enable-mixed-precision-accumulation", "--model-type=generic"),
    ]
    for i, flags in enumerate(same):
        r = compile_hlo(tmp_path, cache, *flags, out=f"s{i}.neff")
        assert r.returncode == 0, r.stderr
    assert len(entries(cache)) == 1
    different = [("-O1",), ("--auto-cast", "matmult"), ("--auto-cast=matmult",
                 "--auto-cast-type=fp16"), ("--enable-saturate-infinity",),
                 ("--internal-foo=1",)]
    for i, flags in enumerate(different):
        r = compile_hlo(tmp_path, cache, *flags, out=f"d{i}.neff")
        assert "compile cache miss" in r.stderr, flags
    assert len(entries(cache)) == 1 + len(different)


def test_no_cache_and_env_var(tmp_path: Path) -> None:
    cache = tmp_path / "env-cache"
    r = neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1", "--no-cache",
                   "-o", str(tmp_path / "m.neff"), cwd=tmp_path,
                   env={"NEURON_COMPILE_CACHE_URL": str(cache)})
    assert r.returncode == 0 and not cache.exists()
    r = neuronx_cc("compile", str(DATA / "matmul.hlo"), "--target", "trn1",
                   "-o", str(tmp_path / "m.neff"), cwd=tmp_path,
                   env={"NEURON_COMPILE_CACHE_URL": f"file://{cache}"})
    assert r.returncode == 0 and len(entries(cache)) == 1


def test_a_failure_is_remembered_until_the_module_or_flags_change(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    bad = tmp_path / "bad.hlo"
    bad.write_text((DATA / "matmul.hlo").read_text().replace(" dot(", " frobnicate("))
    first = compile_hlo(tmp_path, cache, model=bad)
    again = compile_hlo(tmp_path, cache, model=bad)
    assert first.returncode == again.returncode == 1
    error = [line for line in first.stderr.splitlines() if line.startswith("ERROR")]
    assert error == [line for line in again.stderr.splitlines() if line.startswith("ERROR")]
    assert "failed before" in again.stderr and "compile cache miss" not in again.stderr
    other_flags = compile_hlo(tmp_path, cache, "-O1", model=bad)
    assert "compile cache miss" in other_flags.stderr
    bad.write_text((DATA / "matmul.hlo").read_text())
    fixed = compile_hlo(tmp_path, cache, model=bad)
    assert fixed.returncode == 0, fixed.stderr
    r = neuronx_cc("cache", "stats", "--cache-dir", str(cache))
    assert "entries: 3 (1 compiled, 2 failed)" in r.stdout
    r = neuronx_cc("cache", "clean", "--failed-only", "--cache-dir", str(cache))
    assert r.stdout.startswith("removed 2 entries")
    assert len(entries(cache)) == 1


def test_a_damaged_entry_is_compiled_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    compile_hlo(tmp_path, cache, out="a.neff")
    neff = next(cache.glob("neuronxcc-*/MODULE_*/model.neff"))
    neff.write_bytes(neff.read_bytes()[:-10])
    r = compile_hlo(tmp_path, cache, out="b.neff")
    assert r.returncode == 0 and "damaged" in r.stderr and "compile cache miss" in r.stderr
    assert (tmp_path / "a.neff").read_bytes() == (tmp_path / "b.neff").read_bytes()


def _start_compile(tmp_path: Path, cache: Path, out: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "nxcc", "compile", str(RESNET), "--target", "trn1", "-o",
         str(tmp_path / out), "--cache-dir", str(cache), "--verbose", "info",
         "--logfile", str(tmp_path / f"{out}.log")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(not RESNET.exists(), reason="onnx's light ResNet-50 is not installed")
def test_concurrent_compiles_of_one_module_compile_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    procs = [_start_compile(tmp_path, cache, f"r{i}.neff") for i in range(4)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    stderr = "".join(err for _, err in outputs)
    assert stderr.count("compile cache miss: compiling") == 1, stderr
    assert stderr.count("compile cache hit") == 3
    neffs = {(tmp_path / f"r{i}.neff").read_bytes() for i in range(4)}
    assert len(neffs) == 1 and len(entries(cache)) == 1


@pytest.mark.skipif(not RESNET.exists(), reason="onnx's light ResNet-50 is not installed")
def test_a_compile_killed_while_writing_leaves_no_valid_entry(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    proc = _start_compile(tmp_path, cache, "k.neff")
    deadline = time.monotonic() + 60
    while not list(cache.glob("neuronxcc-*/.tmp-*")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert entries(cache) == [] and not (tmp_path / "k.neff").exists()
    assert neuronx_cc("cache", "list", "--cache-dir", str(cache)).stdout == ""
    r = neuronx_cc("compile", str(RESNET), "--target", "trn1", "-o", str(tmp_path / "k.neff"),
                   "--cache-dir", str(cache), "--verbose", "info", cwd=tmp_path)
    assert r.returncode == 0 and "compile cache miss" in r.stderr
    neuronx_cc("cache", "clean", "--cache-dir", str(cache))
    assert list(cache.glob("neuronxcc-*/*")) == []


def test_cache_list_and_clean(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    compile_hlo(tmp_path, cache)
    r = neuronx_cc("cache", "list", "--cache-dir", str(cache))
    assert r.returncode == 0 and r.stdout.startswith("MODULE_") and " ok " in r.stdout
    r = neuronx_cc("cache", "clean", "--cache-dir", str(cache))
    assert r.stdout.startswith("removed 1 entries")
    assert entries(cache) == []


def test_print_ir_after_bypasses_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    compile_hlo(tmp_path, cache)
    r = compile_hlo(tmp_path, cache, "--print-ir-after", "dce")
    assert "IR after dce" in r.stdout and "compile cache hit" not in r.stderr


def test_unreadable_proto_is_not_remembered(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    r = neuronx_cc("compile", str(DATA / "matmul.hlo.pb"), "--target", "trn1", "-o",
                   str(tmp_path / "m.neff"), "--cache-dir", str(cache), cwd=tmp_path)
    if r.returncode != 0:
        assert_one_line_error(r, "NCC_EARG001")
        assert entries(cache) == []
