"""`train --plan --search [--nodes N]`: every layout of a model on N nodes, ranked.

The layouts: TP a divisor of the ranks per node that the model's heads, key/value heads
(with `kv_replicator` = TP / key/value heads when there are fewer of them), FFN and
vocabulary allow; PP a divisor of the rest, at most the layer count (stages split as NxD
splits them); DP what remains, with the config's global batch kept; the micro-batch a
divisor of the global batch / DP up to `MAX_MICRO_BATCH`; sequence parallelism on or off
(on only with TP > 1); ZeRO-1 on or off (on only with DP > 1); recomputation none,
selective or full. A layout whose model state alone (parameters, gradients, optimizer
state and master weights of its fullest stage, and the runtime's reserve) exceeds the
core's HBM is reported as not fitting without building anything.

The others are planned by composition: a stage of k > 2 layers is measured from the same
stage built with one and with two layers (FLOPs, bytes, collectives and stash grow by
the second layer's share for each further layer; the peak of a forward or backward is the
two-layer one, of a last stage's single program grown the same way), so one model and
layout family costs six small builds. The best `CONFIRMED` layouts are then planned in
full (`stages.stage_figures`) and ranked by those figures. Layouts are ranked by
predicted sequences/s among those that fit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from nxcc.backend.program.estimate import Collective, Work
from nxcc.driver.plan import check_plannable, instance_for, plan_config
from nxcc.driver.plan.machine import Machine, machine_for
from nxcc.driver.plan.plan import Plan, make_plan
from nxcc.driver.plan.stages import (
    BUCKET_BYTES,
    MeasuredStage,
    ProgramFigures,
    StageFigures,
    at_first_layer,
    figures_from,
    measure_stage,
    rank_plan,
)
from nxcc.driver.train.config import DistributedConfig, TrainConfig
from nxcc.driver.train.config_checks import check_sizes
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.flat import FlatLayout
from nxcc.driver.train.memory import state_bytes
from nxcc.driver.train.model_stage import Pipeline, decoder_config, plan_pipeline
from nxcc.nxd.models.decoder import stage_specs
from nxcc.nxd.models.decoder.config import PIECES_PER_LAYER

MAX_MICRO_BATCH = 8
RECOMPUTE = (None, "selective", "full")
CONFIRMED = 3


@dataclass(frozen=True)
class Candidate:
    """One layout and what the search found of it (`plan` None when its model state alone
    does not fit; `exact` when planned in full rather than by composition)."""

    config: TrainConfig
    plan: Plan | None
    state_bytes: int
    exact: bool = False

    @property
    def fits(self) -> bool:
        return self.plan is not None and self.plan.fits

    def row(self) -> dict[str, object]:
        d = self.config.distributed
        model = self.config.model
        out: dict[str, object] = {
            "tp": d.tensor_model_parallel_size, "pp": d.pipeline_model_parallel_size,
            "dp": d.data_parallel_size, "sequence_parallel": d.sequence_parallel,
            "zero1": d.zero1, "kv_replicator": d.kv_replicator,
            "recompute": model.activations_checkpoint_granularity if model else None,
            "micro_batch_size": self.config.data.micro_batch_size, "fits": self.fits,
            "exact": self.exact}
        if self.plan is None:
            out.update(hbm_per_core_bytes=self.state_bytes, why="model state alone")
        else:
            out.update(hbm_per_core_bytes=self.plan.worst.hbm["total"],
                       step_time_s=self.plan.step_time_s,
                       sequences_per_s=self.plan.sequences_per_s,
                       tokens_per_s=self.plan.tokens_per_s, mfu=self.plan.mfu)
        return out


@dataclass(frozen=True)
class Search:
    """Every layout, the fitting ones first by throughput."""

    machine: Machine
    candidates: list[Candidate]

    @property
    def fitting(self) -> list[Candidate]:
        return [c for c in self.candidates if c.fits]

    def to_json(self) -> dict[str, object]:
        m = self.machine
        return {"instance": m.instance.name, "nodes": m.nodes, "lnc": m.lnc,
                "layouts": len(self.candidates), "fitting": len(self.fitting),
                "capacity_bytes": m.chip.core_hbm_bytes(m.lnc),
                "ranked": [c.row() for c in self.candidates]}


def layouts(config: TrainConfig, nodes: int) -> list[TrainConfig]:
    """Every valid layout of `config`'s model on `nodes` nodes (see the docstring)."""
    model = config.model
    assert model is not None
    devices = config.trainer.devices
    world = devices * nodes
    gbs = config.data.global_batch_size
    base_model = replace(model, pipeline_cuts=(), cut_after=())
    base = replace(config, trainer=replace(config.trainer, num_nodes=nodes), model=base_model)
    out = []
    for tp in _divisors(devices):
        kv = 1 if model.num_kv_heads % tp == 0 else tp // model.num_kv_heads \
            if tp % model.num_kv_heads == 0 else 0
        if not kv:
            continue
        for pp in _divisors(world // tp):
            dp = world // (tp * pp)
            if pp > model.num_layers or gbs % dp:
                continue
            for mb in (m for m in _divisors(gbs // dp) if m <= MAX_MICRO_BATCH):
                for sp in ((False, True) if tp > 1 else (False,)):
                    for zero1 in ((False, True) if dp > 1 else (False,)):
                        for recompute in RECOMPUTE:
                            layout = replace(
                                base, distributed=DistributedConfig(tp, pp, dp, zero1, sp,
                                                                    kv),
                                data=replace(base.data, micro_batch_size=mb),
                                model=replace(base_model,
                                              activations_checkpoint_granularity=recompute))
                            try:
                                check_sizes(layout)
                            except TrainConfigError:
                                continue
                            out.append(layout)
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def search_layouts(config: TrainConfig, lnc: int | None, instance: str | None,
                   nodes: int | None) -> Search:
    """Every layout of `config`'s model on `nodes` nodes (default: the config's), ranked
    (see the module docstring)."""
    check_plannable(config)
    nodes = nodes or config.trainer.num_nodes
    spec = instance_for(lnc, instance)
    machine = machine_for(spec, lnc, nodes, config.trainer.devices)
    reserve = machine.chip.runtime_bytes_per_core * machine.lnc
    capacity = machine.chip.core_hbm_bytes(machine.lnc)
    found = []
    for layout in layouts(config, nodes):
        state = _state_bytes(layout) + reserve
        if state > capacity:
            found.append(Candidate(layout, None, state))
            continue
        found.append(Candidate(layout, make_plan(layout, machine, figures_of=composed), state))
    ranked = _rank(found)
    confirmed = [Candidate(c.config, plan_config(c.config, lnc, machine.instance.name),
                           c.state_bytes, exact=True) for c in ranked[:CONFIRMED] if c.fits]
    rest = [c for c in ranked if c.config not in {x.config for x in confirmed}]
    return Search(machine, _rank(confirmed + rest))


def _rank(found: list[Candidate]) -> list[Candidate]:
    def key(c: Candidate) -> tuple[int, float]:
        if c.plan is None:
            return (2, c.state_bytes)
        return (0, -c.plan.sequences_per_s) if c.plan.fits else (1, c.plan.worst.hbm["total"])
    return sorted(found, key=key)


def _state_bytes(config: TrainConfig) -> int:
    """The model state of the fullest stage's core (no programs built)."""
    model, d = config.model, config.distributed
    assert model is not None
    pipeline = plan_pipeline(model, d, config.data, flops=False)
    cfg = decoder_config(model)
    slots = len(config.optim.optimizer_config().slots)
    most = 0
    for s in range(d.pipeline_model_parallel_size):
        specs = stage_specs(cfg, rank_plan(config, pipeline, s))
        flat = FlatLayout([p.local_shape(d.tensor_model_parallel_size) for p in specs],
                          d.data_parallel_size, BUCKET_BYTES)
        figures = state_bytes(config.recipe, flat.used,
                              flat.shard_size(d.zero1 and d.data_parallel_size > 1), slots)
        most = max(most, sum(figures.values()))
    return most


def composed(config: TrainConfig, pipeline: Pipeline, stage: int) -> StageFigures:
    """A stage's figures composed from the stage built with one and two layers (see the
    module docstring); built as it is when it has at most two."""
    model = config.model
    assert model is not None
    dplan = at_first_layer(rank_plan(config, pipeline, stage))
    layers = len(dplan.layers)
    if layers <= 2 or dplan.pieces.start % PIECES_PER_LAYER or \
            dplan.pieces.stop % PIECES_PER_LAYER:
        return figures_from(config, dplan, measure_stage(model, config.recipe, dplan))
    start = dplan.pieces.start
    one, two = (measure_stage(model, config.recipe,
                              replace(dplan, last_piece=start + n * PIECES_PER_LAYER))
                for n in (1, 2))
    shapes = tuple(s.local_shape(dplan.tp_size)
                   for s in stage_specs(decoder_config(model), dplan))
    programs = {}
    for name, a in one.programs.items():
        b = two.programs[name]
        grown = name == "forward_backward"  # one function: its peak grows with the layers
        peak = a.peak_bytes + (layers - 1) * (b.peak_bytes - a.peak_bytes) if grown \
            else b.peak_bytes
        programs[name] = ProgramFigures(name, _grow(a.work, b.work, layers), peak)
    stash = one.stash_bytes + (layers - 1) * (two.stash_bytes - one.stash_bytes)
    return figures_from(config, dplan, MeasuredStage(programs, shapes, stash,
                                                     one.handoff_bytes))


def _grow(one: Work, two: Work, layers: int) -> Work:
    """The work of `layers` layers from that of one and of two (each further layer adds
    what the second added)."""
    n = layers - 1
    tensor = Counter({dt: one.tensor_flops[dt] + n * (two.tensor_flops[dt] -
                                                      one.tensor_flops[dt])
                      for dt in set(one.tensor_flops) | set(two.tensor_flops)})
    return Work(tensor, one.vector_flops + n * (two.vector_flops - one.vector_flops),
                one.hbm_bytes + n * (two.hbm_bytes - one.hbm_bytes),
                _grow_collectives(one.collectives, two.collectives, n))


def _grow_collectives(one: list[Collective], two: list[Collective], n: int
                      ) -> list[Collective]:
    """The collectives of one layer and `n` more: those both builds run are kept; of the
    second's others, one whose kind and group one of the first's leftovers shares is that
    collective grown (a variadic all-reduce of every layer's norm gradients), growing by
    the same bytes per layer, and the rest come once per further layer."""
    first, second = Counter(one), Counter(two)
    common = first & second
    left1, left2 = first - common, second - common
    out = list(common.elements())
    for kind, group in {(c.kind, c.group) for c in left1} | {(c.kind, c.group) for c in left2}:
        old = sorted((c for c in left1.elements() if (c.kind, c.group) == (kind, group)),
                     key=lambda c: c.bytes)
        new = sorted((c for c in left2.elements() if (c.kind, c.group) == (kind, group)),
                     key=lambda c: c.bytes)
        for a, b in zip(old, new, strict=False):
            out.append(Collective(kind, a.bytes + n * (b.bytes - a.bytes), group))
        out += old[len(new):] + new[len(old):] * n
    return out


def search_lines(found: Search) -> list[str]:
    """The ranking as a table: the fitting layouts, then how many do not fit."""
    m = found.machine
    lines = [f"search: {len(found.candidates)} layouts on {m.nodes} x {m.instance.name} "
             f"(LNC {m.lnc}), {len(found.fitting)} fit in "
             f"{m.chip.core_hbm_bytes(m.lnc) / 2**30:.1f} GiB per NeuronCore",
             f"{'rank':>4} {'TP':>3} {'PP':>3} {'DP':>4} {'SP':>3} {'ZeRO1':>5} "
             f"{'recompute':>9} {'mb':>3} {'HBM GiB':>8} {'seq/s':>9} {'MFU':>6}  how"]
    for i, c in enumerate(found.fitting, 1):
        r = c.row()
        lines.append(
            f"{i:>4} {r['tp']:>3} {r['pp']:>3} {r['dp']:>4} {_yes(r['sequence_parallel']):>3}"
            f" {_yes(r['zero1']):>5} {str(r['recompute'] or 'none'):>9} "
            f"{r['micro_batch_size']:>3} {r['hbm_per_core_bytes'] / 2**30:>8.2f} "  # type: ignore[operator]
            f"{r['sequences_per_s']:>9.3f} {100 * r['mfu']:>5.1f}%  "  # type: ignore[operator]
            f"{'planned' if c.exact else 'composed'}")
    if not found.fitting:
        lines.append("no layout fits")
    return lines


def _yes(flag: object) -> str:
    return "on" if flag else "off"
