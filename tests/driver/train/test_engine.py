"""The engine on a hand-built TP stage module: one rank against numpy, every layout against
one rank (TP x PP x DP, ZeRO-1), clipping, memory figures, a failing rank."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.backend.runtime.channels import LocalChannels
from nxcc.driver.train.engine import EngineSettings, RankTrainer, StepStats
from nxcc.driver.train.layout import RankLayout
from nxcc.driver.train.ranks import RankFailed, run_rank_threads
from nxcc.driver.train.stage import StagePlan
from nxcc.passes.autodiff.optimizers import OptimizerConfig
from tests.driver.train.toy_stage import Toy, build_toy_stage, numpy_losses

TOY = Toy()
G, S, STEPS, LR, WD = 8, 6, 6, 1e-2, 0.01
BATCHES = [np.random.default_rng(1).integers(0, TOY.vocab, (G, S + 1)) for _ in range(STEPS)]


def _train(tp: int, pp: int, dp: int, zero1: bool = False, clip: float | None = None,
           mb: int = 2) -> tuple[list[StepStats], dict[str, int]]:
    s = EngineSettings(RankLayout(tp, pp, dp), mb, G, S,
                       OptimizerConfig("adamw", weight_decay=WD), lambda k: LR, zero1=zero1,
                       clip=clip, bucket_bytes=256)
    channels = LocalChannels(60)

    def work(rank: int) -> tuple[list[StepStats], dict[str, int]]:
        t = RankTrainer(rank, s, channels, lambda plan: build_toy_stage(TOY, 0, plan))
        try:
            return [t.step(k, b[:, :-1], b[:, 1:]) for k, b in enumerate(BATCHES)], t.memory()
        finally:
            t.close()

    results = run_rank_threads(list(range(s.world)), channels, work)
    losses = [r.loss for r in results[0][0]]
    for stats, _ in results:  # every rank reports the same figures
        assert [r.loss for r in stats] == losses
    return results[0]


def test_one_rank_matches_numpy() -> None:
    stats, _ = _train(1, 1, 1)
    ref = numpy_losses(TOY, 0, BATCHES, LR, WD)
    np.testing.assert_allclose([r.loss for r in stats], ref, rtol=1e-5)
    assert all(r.tokens == G * S for r in stats)
    assert all(r.lr == pytest.approx(LR) for r in stats)


def test_clipping_matches_numpy() -> None:
    stats, _ = _train(1, 2, 1, clip=0.05)
    ref = numpy_losses(TOY, 0, BATCHES, LR, WD, clip=0.05)
    np.testing.assert_allclose([r.loss for r in stats], ref, rtol=1e-5)
    assert stats[0].grad_norm > 0.05  # the clipping acted


@pytest.mark.parametrize(("tp", "pp", "dp", "zero1"),
                         [(2, 1, 1, False), (1, 2, 1, False), (1, 1, 2, True), (2, 2, 2, False),
                          (2, 2, 2, True), (1, 4, 2, True)])
def test_layouts_keep_the_curve(tp: int, pp: int, dp: int, zero1: bool) -> None:
    one, _ = _train(1, 1, 1)
    many, _ = _train(tp, pp, dp, zero1)
    np.testing.assert_allclose([r.loss for r in many], [r.loss for r in one], rtol=1e-5)
    np.testing.assert_allclose([r.grad_norm for r in many], [r.grad_norm for r in one],
                               rtol=1e-4)


def test_zero1_shards_the_optimizer_state() -> None:
    _, plain = _train(2, 2, 2)
    _, zero = _train(2, 2, 2, zero1=True)
    assert zero["optimizer_state_bytes"] == plain["optimizer_state_bytes"] // 2
    assert zero["parameter_bytes"] == plain["parameter_bytes"]
    _, one = _train(1, 1, 1)
    assert plain["parameter_bytes"] < one["parameter_bytes"]


def test_a_failing_rank_stops_the_job() -> None:
    s = EngineSettings(RankLayout(1, 2, 2), 1, 4, S, OptimizerConfig("sgd"), lambda k: LR)
    channels = LocalChannels(60)

    def build(plan: StagePlan):
        if plan.stage == 1:
            raise ValueError("no such layer")
        return build_toy_stage(TOY, 0, plan)

    def work(rank: int) -> StepStats:
        return RankTrainer(rank, s, channels, build).step(0, BATCHES[0][:4, :-1],
                                                          BATCHES[0][:4, 1:])

    with pytest.raises(RankFailed, match=r"rank [23] failed: no such layer"):
        run_rank_threads(list(range(4)), channels, work)


def test_dp_buckets_start_during_the_last_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step starts some DP bucket's reduction while the last micro-batch's gradient
    program is still running (the buckets overlap the backward), and the losses are those
    of one rank."""
    from nxcc.backend.runtime.executor import ProgramExecutor
    from nxcc.driver.train.grad_sync import GradSync

    inside: list[bool] = []
    running = {"now": False}
    observed = ProgramExecutor._run_observed
    start_bucket = GradSync.start_bucket

    def tracked(self, fn, bound, on_result, *rest):  # noqa: ANN001, ANN002, ANN202
        running["now"] = on_result is not None  # a gradient program handing results over
        try:
            observed(self, fn, bound, on_result, *rest)
        finally:
            running["now"] = False

    def recorded(self, index, flat):  # noqa: ANN001, ANN202
        inside.append(running["now"])
        start_bucket(self, index, flat)

    monkeypatch.setattr(ProgramExecutor, "_run_observed", tracked)
    monkeypatch.setattr(GradSync, "start_bucket", recorded)
    stats, _ = _train(1, 1, 2)
    one, _ = _train(1, 1, 1)
    np.testing.assert_allclose([r.loss for r in stats], [r.loss for r in one], rtol=1e-5)
    assert sum(inside) >= STEPS  # at least one bucket per step and DP rank started early
