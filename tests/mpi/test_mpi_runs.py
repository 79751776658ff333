"""SPMD programs run by several processes under `mpiexec` give the bits of the one-process run.

The multi-process cases need mpi4py and mpiexec (`pip install '.[mpi]'`, which CI installs);
without them they are skipped with that reason. They are few and small: the machine may have
two cores, and `mpiexec -n 4` oversubscribes it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.mpi_job import job_layout, launched_processes, world_communicator
from nxcc.backend.runtime.status import NrtError
from tests.cli_helpers import REPO, neuronx_cc
from tests.passes.mesh_partition.programs import FIXTURES, data, meta, named_inputs

MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
try:
    import mpi4py  # noqa: F401
    HAVE_MPI = MPIEXEC is not None
except ImportError:
    HAVE_MPI = False
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs the mpi extra: pip install '.[mpi]'")


def mpiexec(n: int, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "nxcc", *args],
                          cwd=REPO, env=full, capture_output=True, text=True, timeout=240)


@pytest.fixture
def megatron(spmd_neffs: dict[str, Path], tmp_path: Path) -> tuple[Path, Path, str]:
    neff = spmd_neffs["megatron_mlp"]
    np.savez(tmp_path / "in.npz", **named_inputs(neff, "megatron_mlp"))
    return neff, tmp_path / "in.npz", meta("megatron_mlp")["output_shardings"][0]


@needs_mpi
def test_processes_give_the_bits_of_threads(megatron: tuple[Path, Path, str],
                                            tmp_path: Path, runtime_env: Path) -> None:
    neff, inputs, spec = megatron
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt")}
    r = neuronx_cc("run", str(neff), "--world-size", "8", "--inputs", str(inputs), "--output",
                   str(tmp_path / "threads.npz"), "--output-sharding", spec, "-q", env=env)
    assert r.returncode == 0, r.stderr
    threads = np.load(tmp_path / "threads.npz")["output0"]
    np.testing.assert_allclose(threads, data("megatron_mlp")["output0"], rtol=1e-5)
    for n in (2, 4):
        out = tmp_path / f"mpi{n}.npz"
        r = mpiexec(n, "run", str(neff), "--world-size", "8", "--inputs", str(inputs),
                    "--output", str(out), "--output-sharding", spec, "-q", env=env)
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(np.load(out)["output0"], threads)


@needs_mpi
def test_a_job_that_does_not_fit_the_program_is_refused(megatron: tuple[Path, Path, str],
                                                        runtime_env: Path) -> None:
    neff, inputs, _ = megatron
    r = mpiexec(2, "run", str(neff), "--inputs", str(inputs), "-q",
                env={"NXCC_RUNTIME_DIR": str(runtime_env / "rt")})
    assert r.returncode != 0
    lines = [line for line in r.stderr.splitlines() if line.startswith("ERROR")]
    assert len(lines) == 2  # one line from each process, no traceback
    assert "partitioned for 8 ranks, but this job runs 2" in lines[0]
    assert "Traceback" not in r.stderr


@needs_mpi
def test_positional_inputs_run_as_in_one_process(megatron: tuple[Path, Path, str],
                                                 tmp_path: Path, runtime_env: Path) -> None:
    """An .npz of positional arrays (`np.savez(f, a, b)`) is taken in input order under
    mpiexec as in one process, with the same outputs."""
    neff, inputs, spec = megatron
    named = np.load(inputs)
    names = [i["name"] for i in read_neff(neff).manifest["inputs"]]
    np.savez(tmp_path / "positional.npz", *[named[name] for name in names])
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt")}
    args = ["run", str(neff), "--world-size", "8", "--inputs", str(tmp_path / "positional.npz"),
            "--output-sharding", spec, "-q", "--output"]
    r = neuronx_cc(*args, str(tmp_path / "one.npz"), env=env)
    assert r.returncode == 0, r.stderr
    r = mpiexec(2, *args, str(tmp_path / "two.npz"), env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "two.npz")["output0"],
                                  np.load(tmp_path / "one.npz")["output0"])


@needs_mpi
def test_bindings_without_inputs_end_every_process(megatron: tuple[Path, Path, str],
                                                   runtime_env: Path) -> None:
    """`--show-bindings` without `--inputs` is bindings only in every process (process 0
    prints them once); without either, every process refuses the command line at once."""
    neff, _, _ = megatron
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt")}
    r = mpiexec(2, "run", str(neff), "--world-size", "8", "--show-bindings", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("bindings of") == 1 and "all_reduce: ring of 4" in r.stdout
    r = mpiexec(2, "run", str(neff), "--world-size", "8", env=env)
    assert r.returncode == 2
    # one line from each process (the two may interleave on the launcher's stderr)
    assert r.stderr.count("ERROR: [NCC_EARG001]") == 2, r.stderr
    assert r.stderr.count("takes inputs (") == 2 and "Traceback" not in r.stderr


@needs_mpi
def test_a_refusal_in_one_process_ends_every_process(megatron: tuple[Path, Path, str],
                                                     tmp_path: Path, runtime_env: Path) -> None:
    """Process 1 finds its --inputs unreadable (each process runs in a folder of its own,
    as on two hosts): it says so, process 0 ends naming it, neither waits for the other."""
    neff, inputs, _ = megatron
    for name, content in (("good", inputs.read_bytes()), ("bad", b"not an npz")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "in.npz").write_bytes(content)
    command = [sys.executable, "-m", "nxcc", "run", str(neff), "--world-size", "8",
               "--inputs", "in.npz", "-q"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NXCC_RUNTIME_DIR": str(runtime_env / "rt")}
    r = subprocess.run([MPIEXEC, "-n", "1", "-wdir", str(tmp_path / "good"), *command, ":",
                        "-n", "1", "-wdir", str(tmp_path / "bad"), *command], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 1
    assert r.stderr.count("ERROR: [NRT_EXEC_BAD_INPUT] ") == 2, r.stderr
    assert r.stderr.count("cannot read inputs in.npz") == 2
    assert "process 1 of the job failed: cannot read inputs" in r.stderr
    assert "Traceback" not in r.stderr


def test_launcher_variables_and_layout() -> None:
    assert launched_processes({}) == 1
    assert launched_processes({"PMI_SIZE": "4"}) == 4
    assert launched_processes({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    lay = job_layout(8, 2, 1)
    assert (lay.per_process, lay.local_ranks) == (4, [4, 5, 6, 7])
    assert job_layout(None, 8, 3).local_ranks == [3]
    with pytest.raises(NrtError, match="--world-size 8 cannot be spread over the 3 processes"):
        job_layout(8, 3, 0)


def test_without_mpi4py_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(NrtError, match=r"pip install 'nxcc\[mpi\]'"):
        world_communicator()


ALL_REDUCE = """HloModule allreduce, num_partitions=RANKS

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[4,8]{1,0} parameter(0), sharding={devices=[RANKS,1]<=[RANKS]}
  ROOT r = f32[4,8]{1,0} all-reduce(p), channel_id=1, replica_groups={}, to_apply=add
}
"""


def all_reduce_neff(n: int, tmp_path: Path) -> Path:
    src = tmp_path / f"ar{n}.hlo"
    src.write_text(ALL_REDUCE.replace("RANKS", str(n)))
    r = neuronx_cc("compile", str(src), "--target", "trn1", "--output",
                   str(tmp_path / f"ar{n}.neff"))
    assert r.returncode == 0, r.stderr
    return tmp_path / f"ar{n}.neff"


@needs_mpi
def test_64_ranks_on_two_trn1_instances(tmp_path: Path, runtime_env: Path) -> None:
    """64 ranks laid out as two trn1.32xlarge (one process each): the all-reduce is
    hierarchical, its ring leaves each instance once over EFA, and the sum is right."""
    neff = all_reduce_neff(64, tmp_path)
    x = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
    name = read_neff(neff).manifest["inputs"][0]["name"]
    np.savez(tmp_path / "in.npz", **{name: x})
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt"), "NXCC_INSTANCE_TYPE": "trn1.32xlarge",
           "NXCC_RANKS_PER_INSTANCE": "32"}
    r = mpiexec(2, "run", str(neff), "--world-size", "64", "--inputs",
                str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz"), "-q",
                "--show-bindings", env=env)
    assert r.returncode == 0, r.stderr
    line = next(s for s in r.stdout.splitlines() if "all_reduce" in s)
    assert "hierarchical of 64" in line
    hops = line.split("hops ")[1].split(")")[0].split(",")
    assert len(hops) == 64 and [i for i, h in enumerate(hops) if h == "EFA"] == [31, 63]
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(out[out.files[0]], x.reshape(64, 4, 8).sum(0), rtol=1e-5,
                               atol=1e-5)


@needs_mpi
@pytest.mark.parametrize("instance, per, n, why", [
    ("trn1.32xlarge", "3", 6, "a collective group of 3 ranks is not possible"),
    ("trn1.2xlarge", "2", 4, "EFA is not available on trn1.2xlarge, and the ranks cannot be "
                             "extended beyond a single instance"),
])
def test_the_seed_rules_hold_per_instance(instance: str, per: str, n: int, why: str,
                                          tmp_path: Path, runtime_env: Path) -> None:
    neff = all_reduce_neff(n, tmp_path)
    env = {"NXCC_RUNTIME_DIR": str(runtime_env / "rt"), "NXCC_INSTANCE_TYPE": instance,
           "NXCC_RANKS_PER_INSTANCE": per}
    r = mpiexec(2, "run", str(neff), "--world-size", str(n), "--show-bindings", env=env)
    assert r.returncode != 0
    assert why in r.stderr and "Traceback" not in r.stderr


def send_recv_neff(tmp_path: Path) -> tuple[Path, Path]:
    neff = tmp_path / "p2p.neff"
    r = neuronx_cc("compile", str(FIXTURES / "send_recv.hlo"), "--target", "trn1",
                   "--output", str(neff))
    assert r.returncode == 0, r.stderr
    name = read_neff(neff).manifest["inputs"][0]["name"]
    np.savez(tmp_path / "in.npz", **{name: np.arange(1, 5, dtype=np.float32)})
    return neff, tmp_path / "in.npz"


SEND_RECV_EXPECTED = np.array([1, 2, 10 * 1 + 3, 10 * 2 + 4], np.float32)


def test_send_recv_between_two_ranks_in_one_process(tmp_path: Path, runtime_env: Path) -> None:
    """Rank 0 sends its block to rank 1 (a hand-written HLO send/recv pair); rank 1 adds ten
    times what it received to its own block, rank 0 received nothing (zeros)."""
    neff, inputs = send_recv_neff(tmp_path)
    r = neuronx_cc("run", str(neff), "--world-size", "2", "--inputs", str(inputs), "--output",
                   str(tmp_path / "out.npz"), "-q",
                   env={"NXCC_RUNTIME_DIR": str(runtime_env / "rt")})
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output0"], SEND_RECV_EXPECTED)
    shown = neuronx_cc("inspect-neff", str(neff)).stdout
    assert "send f32[2] pairs 0->1: 8 bytes per rank, 8 bytes moved" in shown
    assert "recv_done f32[2] pairs 0->1" in shown


@needs_mpi
def test_send_recv_between_two_processes(tmp_path: Path, runtime_env: Path) -> None:
    neff, inputs = send_recv_neff(tmp_path)
    r = mpiexec(2, "run", str(neff), "--inputs", str(inputs), "--output",
                str(tmp_path / "out.npz"), "-q", env={"NXCC_RUNTIME_DIR": str(runtime_env / "rt")})
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output0"], SEND_RECV_EXPECTED)


def test_profile_trace_shows_compute_and_communication_per_rank(
        megatron: tuple[Path, Path, str], tmp_path: Path, runtime_env: Path) -> None:
    """run --profile: a Chrome trace with one process per rank, compute ops on track 0 and
    the all-reduce on track 1 (the communication thread)."""
    neff, inputs, spec = megatron
    trace = tmp_path / "trace.json"
    r = neuronx_cc("run", str(neff), "--world-size", "8", "--inputs", str(inputs),
                   "--output-sharding", spec, "-q", "--profile", str(trace),
                   env={"NXCC_RUNTIME_DIR": str(runtime_env / "rt")})
    assert r.returncode == 0, r.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == set(range(8))
    comm = [e for e in spans if e["tid"] == 1]
    assert {e["name"] for e in comm} == {"all_reduce"} and len(comm) == 8
    assert any(e["name"] == "dot_general" and e["tid"] == 0 for e in spans)
    names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in events
             if e["name"] in ("process_name", "thread_name")}
    assert {(e["pid"], e["args"]["sort_index"]) for e in events
            if e["name"] == "process_sort_index"} == {(r, r) for r in range(8)}  # rank order
    assert (3, None, "rank 3") in names and (3, 1, "communication") in names


PAIRS = """HloModule pairs, num_partitions=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[96,96]{1,0} parameter(0), sharding={replicated}
  d = f32[96,96]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[96,96]{1,0} all-reduce(d), channel_id=1, replica_groups={{0,1},{2,3}},
    use_global_device_ids=true, to_apply=add
}
"""


def _descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    children = [int(c) for c in found.stdout.split()]
    return children + [d for c in children for d in _descendants(c)]


def rank_processes(launcher: int, command: str = "run") -> list[int]:
    """The pids of the rank processes (not their shims) of the `neuronx-cc command` job
    that `mpiexec` pid `launcher` started."""
    ranks = []
    for pid in _descendants(launcher):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command.encode() in cmdline and b"nxcc.cli.rank_shim" not in cmdline:
            ranks.append(pid)
    return ranks


@needs_mpi
def test_kill_9_of_one_rank_ends_the_others_with_its_name(tmp_path: Path,
                                                          runtime_env: Path) -> None:
    """kill -9 of one of four rank processes mid-run: the other three exit non-zero within
    the timeout plus five seconds, each with one line naming the lost rank, and a new job
    can claim all the cores at once."""
    from nxcc.backend.runtime.cores import holders
    from nxcc.backend.runtime.topology import INSTANCES

    src = tmp_path / "pairs.hlo"
    src.write_text(PAIRS)
    assert neuronx_cc("compile", str(src), "--target", "trn2", "-lnc", "1", "--output",
                      str(tmp_path / "pairs.neff")).returncode == 0
    x = np.random.default_rng(0).standard_normal((96, 96)).astype(np.float32) / 96
    np.savez(tmp_path / "in.npz", p=x)
    timeout = 10
    env = {**os.environ, "PYTHONPATH": str(REPO), "NXCC_RUNTIME_DIR": str(runtime_env / "rt"),
           "NEURON_RT_EXEC_TIMEOUT": str(timeout), "NEURON_LOGICAL_NC_CONFIG": "1"}
    argv = [MPIEXEC, "-n", "4", sys.executable, "-m", "nxcc", "run", str(tmp_path / "pairs.neff"),
            "--world-size", "4", "--inputs", str(tmp_path / "in.npz"), "-q"]
    job = subprocess.Popen([*argv, "--repeat", "1000000"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        instance = INSTANCES["trn2.48xlarge"]
        deadline = time.monotonic() + 120
        while len(holders(runtime_env / "rt", instance)) < 4:  # every rank has loaded
            assert job.poll() is None and time.monotonic() < deadline, job.communicate()
            time.sleep(0.2)
        time.sleep(1.0)
        ranks = rank_processes(job.pid)
        assert len(ranks) == 4, ranks
        victim = ranks[1]
        killed = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        _, err = job.communicate(timeout=timeout + 60)
        took = time.monotonic() - killed
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    assert took < timeout + 5, took
    lines = [line for line in err.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 3, err
    assert all(f"pid {victim}) was lost" in line for line in lines), lines
    again = subprocess.run([*argv, "--repeat", "1"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
