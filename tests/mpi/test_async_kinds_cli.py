"""The async collective kinds from the command line: `inspect-neff` shows them, `run
--profile` puts them on the communication track, and two processes under `mpiexec` (whose
handshake at load compares their collectives) give the bits of two threads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import neuronx_cc
from tests.mpi.test_mpi_runs import mpiexec, needs_mpi
from tests.passes.test_async_kinds import inputs_for, program

STACKED = "{devices=[2,1]<=[2]}"


@pytest.fixture
def gather(tmp_path: Path) -> tuple[Path, Path]:
    """HLO all-gather-start/-done and a reduce-scatter (split by latency-hiding), compiled."""
    text = program("all-gather", 2, asynchronous=True).replace(
        "  e = ", "  q = f32[8,4]{1,0} reduce-scatter(k), dimensions={1}, replica_groups={{0,1}}, "
        "channel_id=2, use_global_device_ids=true, to_apply=max\n  e = ").replace(
        "tuple(e, k)", "tuple(e, q)").replace(", f32[8,8]{1,0}) tuple", ", f32[8,4]{1,0}) tuple")
    src = tmp_path / "gather.hlo"
    src.write_text(text)
    neff = tmp_path / "gather.neff"
    r = neuronx_cc("compile", str(src), "--framework", "XLA", "--target", "inf2", "--output",
                   str(neff))
    assert r.returncode == 0, r.stderr
    x, w = inputs_for(2)
    np.savez(tmp_path / "in.npz", x=x, w=w)
    return neff, tmp_path / "in.npz"


def test_inspect_neff_shows_async_collectives(gather: tuple[Path, Path]) -> None:
    neff, _ = gather
    r = neuronx_cc("inspect-neff", str(neff))
    assert r.returncode == 0, r.stderr
    assert "#0 all_gather (async start/done) f32[8, 8] groups {0,1}" in r.stdout
    assert "#1 reduce_scatter max (async start/done) f32[8, 8] groups {0,1}" in r.stdout
    r = neuronx_cc("inspect-neff", str(neff), "--json")
    assert r.returncode == 0, r.stderr
    kinds = [(c["kind"], c.get("async")) for c in json.loads(r.stdout)["collectives"]]
    assert kinds == [("all_gather", True), ("reduce_scatter", True)]


def test_run_profile_puts_both_on_the_communication_track(
        gather: tuple[Path, Path], tmp_path: Path, runtime_env: Path) -> None:
    neff, inputs = gather
    trace = tmp_path / "trace.json"
    r = neuronx_cc("run", str(neff), "--world-size", "2", "--inputs", str(inputs),
                   "--output-sharding", STACKED, "--output-sharding", STACKED, "-q",
                   "--profile", str(trace), env={"NXCC_RUNTIME_DIR": str(runtime_env / "rt")})
    assert r.returncode == 0, r.stderr
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    comm = sorted((e["pid"], e["name"]) for e in spans if e["tid"] == 1)
    assert comm == [(0, "all_gather"), (0, "reduce_scatter"), (1, "all_gather"),
                    (1, "reduce_scatter")]
    compute = {e["name"] for e in spans if e["tid"] == 0}
    assert {"all_gather_start", "all_gather_done", "reduce_scatter_start",
            "reduce_scatter_done"} <= compute


@needs_mpi
def test_two_processes_give_the_bits_of_two_threads(
        gather: tuple[Path, Path], tmp_path: Path, runtime_env: Path) -> None:
    neff, inputs = gather
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt")}
    common = ["--world-size", "2", "--inputs", str(inputs), "--output-sharding", STACKED,
              "--output-sharding", STACKED, "-q"]
    r = neuronx_cc("run", str(neff), *common, "--output", str(tmp_path / "threads.npz"),
                   env=env)
    assert r.returncode == 0, r.stderr
    r = mpiexec(2, "run", str(neff), *common, "--output", str(tmp_path / "mpi.npz"), env=env)
    assert r.returncode == 0, r.stderr
    threads, procs = np.load(tmp_path / "threads.npz"), np.load(tmp_path / "mpi.npz")
    assert sorted(threads) == sorted(procs) == ["output0", "output1"]
    for name in threads:
        np.testing.assert_array_equal(procs[name], threads[name])
