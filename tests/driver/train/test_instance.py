"""`neuronx-cc train` on the simulated instance: its type, target and LNC from the file and the
environment, the collective seed's rank sets, cores reserved for the job as `run` reserves
them, and trn2 at LNC 2 (each rank's stage programs sharded over two physical cores)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import holders
from nxcc.backend.runtime.topology import INSTANCES
from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.instance import check_placement, training_instance
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.mpi.test_mpi_runs import mpiexec, needs_mpi

GPT = REPO / "examples" / "train" / "megatron_gpt_tiny.yaml"  # TP2 x DP4 on 8 ranks
SMALL = ("trainer.max_steps=2", "model.encoder_seq_length=16",
         "exp_manager.resume_if_exists=false", "exp_manager.create_checkpoint_callback=false")
FOUR = ("trainer.devices=4", "data.global_batch_size=4")  # TP2 x DP2


def where(*overrides: str, **env: str):
    config = load_config(str(GPT), overrides)
    return config, training_instance(config, RuntimeConfig.from_env(env))


def test_the_instance_target_and_lnc_come_from_the_file_and_the_environment() -> None:
    _, w = where()
    assert (w.instance.name, w.target, w.lnc, w.source) == \
        ("trn1.32xlarge", "trn1", 1, "default")
    _, w = where("+trainer.lnc=2")  # NxD's trn2 files set it; `train --plan` reads it so
    assert (w.instance.name, w.target, w.lnc) == ("trn2.48xlarge", "trn2", 2)
    _, w = where("compiler_flags='--model-type transformer --target=trn2'")
    assert (w.instance.name, w.target, w.lnc) == ("trn2.48xlarge", "trn2", 2)
    _, w = where(NXCC_INSTANCE_TYPE="trn2.3xlarge", NEURON_LOGICAL_NC_CONFIG="1")
    assert (w.instance.name, w.target, w.lnc) == ("trn2.3xlarge", "trn2", 1)
    assert w.describe()["software_id"] == "NC_V3"
    _, w = where("compiler_flags='--lnc 2'", NXCC_INSTANCE_TYPE="trn2.3xlarge")
    assert w.lnc == 2 and w.describe()["software_id"] == "NC_V3d"


@pytest.mark.parametrize(("overrides", "env", "key", "fragment"), [
    (("+trainer.lnc=2",), {"NEURON_LOGICAL_NC_CONFIG": "1"}, "trainer.lnc",
     "the LNC settings disagree (trainer.lnc 2, NEURON_LOGICAL_NC_CONFIG 1)"),
    (("+trainer.lnc=2",), {"NXCC_INSTANCE_TYPE": "trn1.32xlarge"}, "trainer.lnc",
     "LNC 2 is not offered by trn1.32xlarge"),
    (("compiler_flags='--target trn2'",), {"NXCC_INSTANCE_TYPE": "trn1.32xlarge"},
     "compiler_flags", "--target trn2 compiles for another NeuronCore"),
    (("compiler_flags='--lnc 3'",), {}, "compiler_flags", "--lnc '3' is not 1 or 2"),
])
def test_settings_that_disagree_are_refused(overrides, env, key, fragment) -> None:
    with pytest.raises(TrainConfigError) as err:
        where(*overrides, **env)
    assert err.value.where == key and fragment in str(err.value)


def test_collective_rank_sets_of_the_instance() -> None:
    config, w = where("trainer.devices=6", "data.global_batch_size=6")  # TP2 x DP3
    with pytest.raises(TrainConfigError) as err:
        check_placement(config, w)
    assert str(err.value) == (
        "[NCC_ETRN001] trainer.devices: 6 ranks per node of trn1.32xlarge: its tensor-parallel "
        "groups of 2 and data-parallel groups of 3 run their collectives over 6 ranks at "
        "once; trn1.32xlarge (4x4 2D torus, LNC=1) supports groups of 2, 8 or 32 ranks")
    check_placement(*where())  # TP2 x DP4: 8 ranks, a torus row
    config, w = where("trainer.devices=6", "data.global_batch_size=6",
                      NXCC_INSTANCE_TYPE="inf2.48xlarge")  # any even number on inf2's ring
    check_placement(config, w)
    config, w = where("trainer.devices=64", "data.global_batch_size=32")
    with pytest.raises(TrainConfigError, match="64 ranks per node, but trn1.32xlarge has 32"):
        check_placement(config, w)
    config, w = where("trainer.devices=2", "trainer.num_nodes=2", "data.global_batch_size=4",
                      NXCC_INSTANCE_TYPE="trn1.2xlarge")
    with pytest.raises(TrainConfigError, match="EFA is not available on trn1.2xlarge"):
        check_placement(config, w)


def test_an_unsupported_rank_set_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    r = neuronx_cc("train", str(GPT), "--quiet", "trainer.devices=6", "data.global_batch_size=6",
                   f"exp_manager.exp_dir={tmp_path / 'exp'}")
    assert_one_line_error(r, "[NCC_ETRN001] trainer.devices: 6 ranks", "groups of 3",
                          "2, 8 or 32 ranks")
    assert r.returncode == 2 and not (tmp_path / "exp").exists()


@needs_mpi
def test_an_unsupported_rank_set_is_one_line_under_mpiexec(tmp_path: Path) -> None:
    r = mpiexec(2, "train", str(GPT), "--quiet", "trainer.devices=6",
                "data.global_batch_size=6", f"exp_manager.exp_dir={tmp_path / 'exp'}", env={})
    assert_one_line_error(r, "[NCC_ETRN001] trainer.devices: 6 ranks", "groups of 3")
    assert r.returncode == 2 and not (tmp_path / "exp").exists()


def test_tp2_dp4_trains_on_its_own_cores_which_are_free_again_after(tmp_path: Path) -> None:
    lines: list[str] = []
    summary = run_training(load_config(str(GPT), (f"exp_manager.exp_dir={tmp_path}", *SMALL)),
                           lines.append)
    assert summary["steps"] == 2 and summary["instance"]["instance_type"] == "trn1.32xlarge"
    assert summary["cores"] == [[0, c] for c in range(8)]
    assert summary["core_programs"] == {"forward_backward": 1}
    assert lines[0] == ("instance trn1.32xlarge (default), stages compiled for trn1 at LNC 1; "
                        "node 0: nc0-7 of trn1.32xlarge (LNC=1)")
    assert not holders(os.environ["NXCC_RUNTIME_DIR"], INSTANCES["trn1.32xlarge"])


def test_trn2_at_lnc2_trains_with_two_core_programs_per_rank(tmp_path: Path,
                                                             monkeypatch) -> None:
    """TP2 x DP2 on a trn2.3xlarge: four logical cores of two NeuronCore-v3 each; every stage
    compiled for trn2 and sharded over the two physical cores; the same losses as LNC 1."""
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "trn2.3xlarge")
    common = (*SMALL, *FOUR)
    lnc2 = run_training(load_config(str(GPT), (f"exp_manager.exp_dir={tmp_path / 'a'}",
                                               *common)), lambda _: None)
    assert lnc2["instance"] == {"instance_type": "trn2.3xlarge",
                                "instance_source": "NXCC_INSTANCE_TYPE", "target": "trn2",
                                "lnc": 2, "software_id": "NC_V3d", "logical_cores": 4}
    assert lnc2["core_programs"] == {"forward_backward": 2}
    assert lnc2["cores"] == [[0, c] for c in range(4)]
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    lnc1 = run_training(load_config(str(GPT), (f"exp_manager.exp_dir={tmp_path / 'b'}",
                                               *common)), lambda _: None)
    assert lnc1["core_programs"] == {"forward_backward": 1} and lnc1["instance"]["lnc"] == 1
    np.testing.assert_allclose(lnc2["losses"], lnc1["losses"], rtol=1e-5)


def test_a_second_job_that_needs_taken_cores_is_refused_naming_the_first(tmp_path: Path) -> None:
    """Two jobs on one trn1.2xlarge (two NeuronCores): the first holds both while it trains;
    the second is refused at once, naming it, as `neuronx-cc run` is."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NXCC_INSTANCE_TYPE": "trn1.2xlarge"}
    two = ("trainer.devices=2", "data.global_batch_size=2", "model.encoder_seq_length=16",
           "exp_manager.resume_if_exists=false", "exp_manager.create_checkpoint_callback=false",
           "trainer.limit_val_batches=0")
    first = subprocess.Popen([sys.executable, "-m", "nxcc", "train", str(GPT), "--quiet", *two,
                              "trainer.max_steps=100000", f"exp_manager.exp_dir={tmp_path / 'a'}"],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 120
        while not holders(env["NXCC_RUNTIME_DIR"], INSTANCES["trn1.2xlarge"]):
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.2)
        second = neuronx_cc("train", str(GPT), "--quiet", *two, "trainer.max_steps=1",
                            f"exp_manager.exp_dir={tmp_path / 'b'}", env=env)
    finally:
        first.kill()
        first.communicate()
    line = assert_one_line_error(second, "[NRT_LOAD_NOT_ENOUGH_NC]", "trn1.2xlarge",
                                 f"nc0-1 held by pid {first.pid}", "nxcc train")
    assert "the job's 2 ranks on node 0 need 2 consecutive free NeuronCores" in line
    assert not (tmp_path / "b").exists()
