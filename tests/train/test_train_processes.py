"""`neuronx-cc train` end to end: ranks as threads and under `mpiexec -n 2` (four rank
threads in each process) give the same bits; a damaged checkpoint stops every rank with one
line, in one process and across processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nxcc.driver.train.metrics import read_metrics
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.spmd.test_mpi_runs import mpiexec, needs_mpi

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
    assert lines[0].startswith("memory rank 0 (tp 0 pp 0 dp 0): parameter ")
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


def test_other_layout_is_refused(threads: Path) -> None:
    r = neuronx_cc("train", EXAMPLE, *QUICK, "trainer.max_steps=3",
                   f"exp_manager.exp_dir={threads}", "exp_manager.resume_if_exists=true",
                   "distributed_strategy.zero1=false")
    assert_one_line_error(r, "[NCC_ETRN001]", "resharding is not supported")


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
