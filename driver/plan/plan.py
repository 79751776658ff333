"""`make_plan(config, machine)`: what one training step of a layout costs on real Trainium.

Built from the stage programs `train` would run (`stages.stage_figures`), per stage:

- HBM per logical core: parameters, gradients, optimizer state and master weights (of
  the ZeRO-1 shard), the activations 1F1B keeps in flight (stash x micro-batches held),
  the programs' peak intermediates (scratch), the collective buffers (the largest
  collective's operand or the DP bucket, both directions) and the runtime's micro-code;
  against the core's HBM (`ir.hardware`);
- time: each program's compute (`backend.program.estimate.compute_seconds`) plus its TP
  collectives on the link the TP group binds (`machine.Machine.link`), the activation
  handed between stages on theirs, played through the 1F1B schedule (`timeline`); then
  the DP gradient reduction (all-reduce, or reduce-scatter with ZeRO-1), started during
  the last micro-batch's backward as the engine starts it, so only what outlasts that
  backward is added; with tied embeddings across stages, the all-reduce of the embedding's
  gradient over the first and last stages, which the engine runs after the backward and
  before the reduction of the buckets holding it; the optimizer update program; with
  ZeRO-1 the parameters' all-gather. The step ends when the last stage to finish does.

Throughput is the global batch over the step time; MFU counts 6N + 12 L h s FLOPs per
token (N the model's parameters, L layers, h hidden size, s the sequence: the convention of
AWS's published tables) against every core's dense BF16 peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nxcc.backend.program.estimate import (
    EFFICIENCY,
    Collective,
    Efficiency,
    Work,
    collective_seconds,
    compute_seconds,
)
from nxcc.driver.plan.machine import Machine
from nxcc.driver.plan.stages import BUCKET_BYTES, StageFigures, stage_figures
from nxcc.driver.plan.timeline import Interval, one_f_one_b_timeline
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.memory import in_flight, state_bytes
from nxcc.driver.train.model_stage import Pipeline, decoder_config, pieces_text, plan_pipeline
from nxcc.nxd.models.decoder import model_specs

HBM_KEYS = ("parameters", "gradients", "optimizer_state", "master_weights", "activations",
            "scratch", "collective_buffers", "runtime_reserve")


@dataclass(frozen=True)
class StageCost:
    """One stage's rank: its HBM breakdown (bytes, with `total`) and its time (seconds)."""

    stage: int
    layers: str
    held: int  # micro-batches in flight at most
    hbm: dict[str, int]
    forward_s: float  # one micro-batch's forward op (the last stage: forward_backward)
    backward_s: float
    forward_communication_s: float  # TP collectives inside forward_s
    backward_communication_s: float  # and inside backward_s
    transfer_s: float  # the activation to the next stage
    dp_s: float
    dp_exposed_s: float
    optimizer_s: float
    gather_s: float
    end_s: float
    flops_per_micro_batch: int
    param_elements: int
    tied_s: float = 0.0  # the tied embedding's gradient summed over the first/last pair


@dataclass(frozen=True)
class Plan:
    """A layout's plan (see the module docstring)."""

    config: TrainConfig
    machine: Machine
    pipeline: Pipeline
    stages: list[StageCost]
    timeline: list[list[Interval]]
    efficiency: Efficiency
    host_bytes_per_node: int
    model_parameters: int

    @property
    def worst(self) -> StageCost:
        """The stage whose core needs the most HBM."""
        return max(self.stages, key=lambda s: s.hbm["total"])

    @property
    def capacity(self) -> int:
        return self.machine.chip.core_hbm_bytes(self.machine.lnc)

    @property
    def fits(self) -> bool:
        return self.worst.hbm["total"] <= self.capacity

    @property
    def step_time_s(self) -> float:
        return max(s.end_s for s in self.stages)

    @property
    def micro_batches(self) -> int:
        d = self.config.distributed
        return self.config.data.micro_batches_per_step(d.data_parallel_size)

    @property
    def sequences_per_s(self) -> float:
        return self.config.data.global_batch_size / self.step_time_s

    @property
    def tokens_per_s(self) -> float:
        return self.sequences_per_s * self.config.data.seq_length

    @property
    def model_flops_per_token(self) -> int:
        m = self.config.model
        assert m is not None
        return 6 * self.model_parameters + 12 * m.num_layers * m.hidden_size * \
            self.config.data.seq_length

    @property
    def mfu(self) -> float:
        peak = self.machine.chip.peak_bf16_per_core * self.machine.lnc * \
            self.config.trainer.world_size
        return self.model_flops_per_token * self.tokens_per_s / peak

    @property
    def bubble_s(self) -> float:
        """The busiest stage's idle time inside the 1F1B schedule."""
        busy = max(self.timeline, key=lambda ops: sum(i.end - i.start for i in ops))
        return busy[-1].end - sum(i.end - i.start for i in busy)


#: How a plan gets a stage's figures: `stages.stage_figures` builds the stage itself.
FiguresOf = Callable[[TrainConfig, Pipeline, int], StageFigures]


def make_plan(config: TrainConfig, machine: Machine, efficiency: Efficiency = EFFICIENCY,
              figures_of: FiguresOf = stage_figures) -> Plan:
    """The plan of `config`'s layout on `machine` (TrainConfigError when the decoder refuses
    the layout)."""
    d = config.distributed
    assert config.model is not None
    pipeline = plan_pipeline(config.model, d, config.data, flops=False)
    figures = [figures_of(config, pipeline, s) for s in range(d.pipeline_model_parallel_size)]
    micro = config.data.micro_batches_per_step(d.data_parallel_size)
    times = [_stage_times(config, machine, efficiency, s, f) for s, f in enumerate(figures)]
    timeline = one_f_one_b_timeline([t.forward for t in times], [t.backward for t in times],
                                    [t.transfer for t in times], micro)
    stages = []
    for s, (f, t) in enumerate(zip(figures, times, strict=True)):
        # the DP buckets start during the last backward program (on the last stage, the
        # last forward_backward)
        last_backward = t.forward if f.last else t.backward
        dp, optimizer, gather = _after_backward(config, machine, efficiency, s, f)
        tied = _tied_seconds(config, machine, efficiency, f)
        exposed = max(0.0, dp - last_backward)
        held = in_flight(s, len(figures), micro)
        stages.append(StageCost(
            s, pieces_text(f.pieces), held, _hbm(config, machine, f, held), t.forward,
            t.backward, t.forward_comm, t.backward_comm, t.transfer, dp, exposed, optimizer,
            gather, timeline[s][-1].end + tied + exposed + optimizer + gather, _flops(f),
            f.param_elements, tied))
    return Plan(config, machine, pipeline, stages, timeline, efficiency,
                _host_bytes(config, figures), _parameters(config))


def _flops(f: StageFigures) -> int:
    return sum(p.work.flops for p in f.programs.values())


def _program_seconds(work: Work, machine: Machine, efficiency: Efficiency, bandwidth: float
                     ) -> tuple[float, float]:
    """(compute + collectives, collectives) seconds of one execution."""
    comm = sum(collective_seconds(c, bandwidth, efficiency) for c in work.collectives)
    return compute_seconds(work, machine.chip, machine.lnc, efficiency) + comm, comm


@dataclass(frozen=True)
class _Times:
    forward: float
    backward: float
    forward_comm: float
    backward_comm: float
    transfer: float


def _stage_times(config: TrainConfig, machine: Machine, efficiency: Efficiency, s: int,
                 f: StageFigures) -> _Times:
    """Seconds of stage `s`'s forward and backward ops (and of the TP collectives in
    them), and of handing an activation to the next stage."""
    layout = config.distributed.layout
    rank = layout.rank(0, s, 0)
    _, tp_bw = machine.link(layout.tp_group(rank))
    runs = {n: _program_seconds(p.work, machine, efficiency, tp_bw)
            for n, p in f.programs.items()}
    forward, backward = runs["forward_backward" if f.last else "forward"], \
        (0.0, 0.0) if f.last else runs["backward"]
    peer = layout.stage_peer(rank, 1)
    transfer = 0.0
    if peer is not None:
        _, bw = machine.link([rank, peer])
        transfer = collective_seconds(Collective("send", f.handoff_bytes, 2), bw, efficiency)
    return _Times(forward[0], backward[0], forward[1], backward[1], transfer)


def _tied_seconds(config: TrainConfig, machine: Machine, efficiency: Efficiency,
                  f: StageFigures) -> float:
    """Seconds of summing a tied embedding's gradient (f32, as the engine reduces it) over
    the first and the last stage's ranks; 0 for a stage that shares nothing."""
    if not f.shared_elements:
        return 0.0
    layout = config.distributed.layout
    pair = [layout.rank(0, 0, 0), layout.rank(0, layout.pp - 1, 0)]
    _, bw = machine.link(pair)
    return collective_seconds(Collective("all_reduce", 4 * f.shared_elements, 2), bw,
                              efficiency)


def _after_backward(config: TrainConfig, machine: Machine, efficiency: Efficiency, s: int,
                    f: StageFigures) -> tuple[float, float, float]:
    """(DP reduction, optimizer update, ZeRO-1 all-gather) seconds of stage `s`'s rank."""
    d = config.distributed
    dp = d.data_parallel_size
    if dp == 1:
        return 0.0, compute_seconds(f.update, machine.chip, machine.lnc, efficiency), 0.0
    layout = d.layout
    _, bw = machine.link(layout.dp_group(layout.rank(0, s, 0)))
    grad = 4  # the engine reduces the gradients in f32
    zero1 = d.zero1
    reduce = Collective("reduce_scatter" if zero1 else "all_reduce", grad * f.flat_elements,
                        dp)
    gather = 0.0
    if zero1:
        weight = config.recipe.weight_dtype.itemsize
        gather = collective_seconds(Collective("all_gather", weight * f.shard_elements, dp),
                                    bw, efficiency)
    return (collective_seconds(reduce, bw, efficiency),
            compute_seconds(f.update, machine.chip, machine.lnc, efficiency), gather)


def _hbm(config: TrainConfig, machine: Machine, f: StageFigures, held: int) -> dict[str, int]:
    """The HBM breakdown of a rank of stage `f` (see the module docstring)."""
    slots = len(config.optim.optimizer_config().slots)
    state = state_bytes(config.recipe, f.param_elements, f.shard_elements, slots)
    master = 4 * f.shard_elements if config.recipe.master_weights else 0
    out = {
        "parameters": state["parameter_bytes"],
        "gradients": state["gradient_bytes"],
        "optimizer_state": state["optimizer_state_bytes"] - master,
        "master_weights": master,
        "activations": 0 if f.last else f.stash_bytes * held,
        "scratch": f.peak_bytes,
        "collective_buffers": 2 * max(BUCKET_BYTES, f.largest_collective),
        "runtime_reserve": machine.chip.runtime_bytes_per_core * machine.lnc,
    }
    out["total"] = sum(out.values())
    return out


def _host_bytes(config: TrainConfig, figures: list[StageFigures]) -> int:
    """Host memory of the fullest node: each rank's parameters once in f32 (NxD
    initialises a rank's own modules on the host, then moves them to the device)."""
    lay = config.distributed.layout
    per_node = config.trainer.devices
    totals: dict[int, int] = {}
    for rank in range(lay.world_size):
        node = rank // per_node
        totals[node] = totals.get(node, 0) + 4 * figures[lay.coords(rank).pp].param_elements
    return max(totals.values())


def _parameters(config: TrainConfig) -> int:
    model = config.model
    assert model is not None
    cfg = decoder_config(model)
    total = 0
    for spec in model_specs(cfg):
        n = 1
        for dim in spec.shape:
            n *= dim
        total += n
    return total
