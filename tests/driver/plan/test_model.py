"""The plan's model: 1F1B in time, the links a group binds, and the verdicts on real
configurations at full size (NxD's published layouts fit; layouts whose model state alone
cannot fit do not)."""

from __future__ import annotations

import pytest

from nxcc.driver.plan import plan_training
from nxcc.driver.plan.machine import EFA, HBM, NEURONLINK, Machine, machine_for
from nxcc.driver.plan.timeline import one_f_one_b_timeline
from nxcc.driver.train.errors import TrainConfigError
from nxcc.ir.hardware import INSTANCE_TYPES
from tests.cli_helpers import REPO

PLANS = REPO / "examples" / "plan"


@pytest.mark.parametrize(("stages", "micro"), [(1, 3), (2, 5), (4, 8), (4, 2)])
def test_balanced_1f1b_takes_micro_batches_plus_stages_minus_one_slots(
        stages: int, micro: int) -> None:
    f, b = 1.0, 2.0
    timeline = one_f_one_b_timeline([f] * (stages - 1) + [f + b], [b] * (stages - 1) + [0.0],
                                    [0.0] * stages, micro)
    assert max(ops[-1].end for ops in timeline) == pytest.approx((micro + stages - 1) * (f + b))
    for ops in timeline:  # every forward before its backward, in micro-batch order
        done = [(i.kind, i.micro_batch) for i in ops]
        assert [m for k, m in done if k == "F"] == list(range(micro))
        assert all(done.index(("F", m)) < done.index(("B", m)) for m in range(micro))


def test_a_transfer_delays_the_next_stage() -> None:
    timeline = one_f_one_b_timeline([1.0, 1.0], [1.0, 0.0], [0.5, 0.0], 1)
    assert (timeline[1][0].start, timeline[0][-1].start) == (1.5, 3.0)  # both ways


def test_groups_bind_the_links_the_runtime_would() -> None:
    m = machine_for(INSTANCE_TYPES["trn1.32xlarge"], None, 2, 32)
    assert m.link([0, 1])[0] == HBM  # the two cores of one Trainium
    assert m.link(list(range(8)))[0] == NEURONLINK
    kind, rate = m.link([0, 32])
    assert kind == EFA and rate == 100e9 / 32  # 800 Gbps shared by the node's 32 cores
    trn2 = machine_for(INSTANCE_TYPES["trn2.48xlarge"], None, 1, 64)
    assert (trn2.lnc, trn2.cores_per_chip, trn2.link([0, 3])[0]) == (2, 4, HBM)
    assert isinstance(m, Machine)


def test_a_machine_that_cannot_hold_the_job_is_refused() -> None:
    with pytest.raises(TrainConfigError, match="64 ranks per node, but trn1.32xlarge has 32"):
        machine_for(INSTANCE_TYPES["trn1.32xlarge"], None, 1, 64)
    with pytest.raises(TrainConfigError, match="no EFA"):
        machine_for(INSTANCE_TYPES["trn1.2xlarge"], None, 2, 2)
    with pytest.raises(TrainConfigError, match="trainer.lnc: 2 is not an LNC"):
        machine_for(INSTANCE_TYPES["trn1.32xlarge"], 2, 1, 16)


def test_405b_on_64_nodes_splits_126_layers_as_nxd_and_fits() -> None:
    plan = plan_training(str(PLANS / "hf_llama3.1_405B_trn1.yaml"))
    assert [s.layers for s in plan.stages[:3]] == ["layers 0-2", "layers 3-5", "layers 6-9"]
    assert plan.pipeline.split == "nxd" and plan.fits
    # 1F1B keeps 32 micro-batches on stage 0, 30 on stage 2: the first with 4 layers
    assert [s.held for s in plan.stages[:3]] == [32, 31, 30] and plan.worst.stage == 2
    assert 0 < plan.mfu < 1


@pytest.mark.parametrize(("name", "overrides"), [
    ("hf_llama3_70B.yaml", ("trainer.num_nodes=1", "distributed_strategy."
                            "pipeline_model_parallel_size=1", "data.global_batch_size=32")),
    ("hf_llama3.1_405B_trn1.yaml", ("trainer.num_nodes=8",
                                    "distributed_strategy.pipeline_model_parallel_size=8")),
])
def test_model_state_alone_overflows(name: str, overrides: tuple[str, ...]) -> None:
    plan = plan_training(str(PLANS / name), overrides)
    worst = plan.worst.hbm
    assert not plan.fits
    assert worst["parameters"] + worst["gradients"] + worst["optimizer_state"] + \
        worst["master_weights"] > plan.capacity


def test_trn2_layout_with_pipeline_cuts_fits_at_lnc_2() -> None:
    plan = plan_training(str(PLANS / "hf_llama3_70B_trn2.yaml"))
    assert (plan.machine.instance.name, plan.machine.lnc) == ("trn2.48xlarge", 2)
    assert plan.capacity == 24 * 2**30 and plan.fits
    assert [s.layers for s in plan.stages] == ["layers 0-18", "layers 19-39", "layers 40-60",
                                               "layers 61-79"]
