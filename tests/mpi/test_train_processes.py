"""`neuronx-cc train` end to end: ranks as threads and under `mpiexec -n 2` (four rank
threads in each process) give the same bits; a damaged checkpoint stops every rank with one
line, in one process and across processes; kill -9 of one rank's process ends the other with
one line naming it, and leaves no process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nxcc.driver.train.metrics import read_metrics
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.mpi.test_mpi_runs import MPIEXEC, mpiexec, needs_mpi, rank_processes

EXAMPLE = str(REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml")
QUICK = ("--quiet", "model.encoder_seq_length=16", "trainer.max_steps=2",
         "model.optim.sched.max_steps=20",
         "exp_manager.checkpoint_callback_params.every_n_train_steps=2")


def _losses(exp: Path) -> list[float]:
    return [r["loss"] for r in read_metrics(str(exp / "metrics.jsonl"))]


@pytest.fixture(scope="module")
def threads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exp = tmp_path_factory.mktemp("threads")
    r = neuronx_cc("train", EXAMPLE, *QUICK, f"exp_manager.exp_dir={exp}")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("instance trn1.32xlarge (default), stages compiled for trn1 at LNC 1; "
                        "node 0: nc0-7 of trn1.32xlarge (LNC=1)")
    assert lines[1].startswith("memory rank 0 (tp 0 pp 0 dp 0): parameter ")
    assert lines[-3].startswith("step 1/2  loss ") and "tokens/s" in lines[-3]
    assert lines[-1].startswith("trained steps 1..2 on 8 ranks: final loss ")
    return exp


def _damage(exp: Path) -> None:
    shard = exp / "checkpoints" / "step_2" / "params_tp1_pp1.npz"
    shard.write_bytes(shard.read_bytes()[:-7])


def test_damaged_checkpoint_stops_the_job_in_one_line(threads: Path, tmp_path: Path) -> None:
    exp = tmp_path / "copy"
    r = neuronx_cc("train", EXAMPLE, *QUICK, f"exp_manager.exp_dir={exp}")
    assert r.returncode == 0, r.stderr
    _damage(exp)
    r = neuronx_cc("train", EXAMPLE, *QUICK, "trainer.max_steps=3",
                   f"exp_manager.exp_dir={exp}", "exp_manager.resume_if_exists=true")
    assert_one_line_error(r, "[NCC_ETRN002]", "params_tp1_pp1.npz", "truncated")


def test_another_layout_resumes_from_the_command_line(threads: Path, tmp_path: Path) -> None:
    exp = tmp_path / "copy"
    shutil.copytree(threads, exp)
    r = neuronx_cc("train", EXAMPLE, *QUICK, "trainer.max_steps=3",
                   f"exp_manager.exp_dir={exp}", "exp_manager.resume_if_exists=true",
                   "distributed_strategy.zero1=false",
                   "distributed_strategy.pipeline_model_parallel_size=1")  # TP2 x DP4
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("trained steps 3..3 on 8 ranks")
    assert [rec["step"] for rec in read_metrics(str(exp / "metrics.jsonl"))] == [1, 2, 3]


@needs_mpi
def test_two_processes_give_the_bits_of_threads(threads: Path, tmp_path: Path) -> None:
    exp = tmp_path / "mpi"
    r = mpiexec(2, "train", EXAMPLE, *QUICK, f"exp_manager.exp_dir={exp}", env={})
    assert r.returncode == 0, r.stderr
    assert _losses(exp) == _losses(threads)
    assert r.stdout.splitlines()[-1].startswith("trained steps 1..2 on 8 ranks")
    manifest = json.loads((exp / "checkpoints" / "step_2" / "checkpoint.json").read_text())
    assert len(manifest["files"]) == 12
    _damage(exp)
    r = mpiexec(2, "train", EXAMPLE, *QUICK, "trainer.max_steps=3",
                f"exp_manager.exp_dir={exp}", "exp_manager.resume_if_exists=true", env={})
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "[NCC_ETRN002]" in errors[0] and "truncated" in errors[0]


@needs_mpi
def test_kill_9_of_one_rank_process_ends_the_other_naming_it(tmp_path: Path) -> None:
    exp, timeout = tmp_path / "exp", 10
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEURON_RT_EXEC_TIMEOUT": str(timeout)}
    job = subprocess.Popen(
        [MPIEXEC, "-n", "2", sys.executable, "-m", "nxcc", "train", EXAMPLE, *QUICK,
         "trainer.max_steps=100000", "trainer.log_every_n_steps=1", "trainer.devices=2",
         "distributed_strategy.tensor_model_parallel_size=1",
         "distributed_strategy.pipeline_model_parallel_size=2",
         "distributed_strategy.zero1=false", f"exp_manager.exp_dir={exp}"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        metrics = exp / "metrics.jsonl"
        while not (metrics.exists() and metrics.read_text().count("\n") >= 2):
            assert job.poll() is None and time.monotonic() < deadline, job.communicate()
            time.sleep(0.2)
        ranks = rank_processes(job.pid, "train")
        assert len(ranks) == 2, ranks
        os.kill(ranks[1], signal.SIGKILL)
        _, err = job.communicate(timeout=timeout + 60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    lines = [line for line in err.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 1 and f"pid {ranks[1]}) was lost" in lines[0], err
    assert err.count("WARNING:") <= 1, err  # the ignored-keys line once per job
    time.sleep(0.5)
    assert not Path(f"/proc/{ranks[0]}").exists() or \
        Path(f"/proc/{ranks[0]}/stat").read_text().split()[2] == "Z", "a rank was left running"
