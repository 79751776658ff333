"""Automatic pipeline cut points: stages of balanced compute, by the IR's FLOP counts.

Without `model.pipeline_cuts` the layers are split so that the stages' compute per
micro-batch (forward + backward FLOPs of their programs, `ir.flops`) is as even as whole
layers allow. `stage_costs` measures the decoder's own stage programs with one and two
layers for each kind of stage (first: with the embedding; middle; last: with the head and
loss, one `forward_backward` where the others recompute their forward in the backward), a
stage's cost growing by the same amount with each further layer; `balanced_cuts` picks the
contiguous split that minimises the largest stage (exact, by dynamic programming).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from nxcc.compiler.decoder import DecoderConfig, build_stage, program
from nxcc.compiler.decoder import StagePlan as DecoderPlan
from nxcc.ir.flops import module_flops


@dataclass(frozen=True)
class StageCosts:
    """FLOPs per micro-batch of a stage of one layer and of each further layer, for the
    first, middle and last stage kinds (indices 0, 1, 2)."""

    one: tuple[int, int, int]
    more: tuple[int, int, int]

    def of(self, layers: int, first: bool, last: bool) -> int:
        kind = 2 if last else (0 if first else 1)
        extra = (self.one[0] - self.one[1]) if first and last else 0  # the embedding
        return self.one[kind] + (layers - 1) * self.more[kind] + extra


def _flops(cfg: DecoderConfig, plan: DecoderPlan) -> int:
    module = build_stage(cfg, plan)
    names = ["forward_backward"] if plan.has_head else ["forward", "backward"]
    return sum(module_flops(program(module, n)) for n in names)


@lru_cache(maxsize=16)
def stage_costs(cfg: DecoderConfig, micro_batch: int, seq_length: int, recompute: str
                ) -> StageCosts:
    """The costs of `cfg`'s stages for one micro-batch (see the module docstring); `cfg`
    has at least 2 layers."""
    def cost(layers: int, kind: int) -> int:
        return _flops(cfg, DecoderPlan(
            first_layer=0, last_layer=layers, has_embedding=kind == 0, has_head=kind == 2,
            recompute=recompute, micro_batch=micro_batch, seq_length=seq_length))

    one = tuple(cost(1, k) for k in range(3))
    more = tuple(cost(2, k) - one[k] for k in range(3))
    return StageCosts(one, more)  # type: ignore[arg-type]


def balanced_cuts(costs: StageCosts, num_layers: int, stages: int) -> tuple[int, ...]:
    """The last layer of each stage but the last (as `pipeline_cuts` give them) for the
    split whose largest stage cost is least; ties go to the earliest cuts."""
    if not 1 <= stages <= num_layers:
        raise ValueError(f"{num_layers} layers cannot make {stages} non-empty stages")
    inf = float("inf")
    # best[s][n]: least largest cost of the first n layers in s + 1 stages, and its cuts
    best: list[list[tuple[float, tuple[int, ...]]]] = [
        [(costs.of(n, True, stages == 1), ()) if n else (inf, ()) for n in
         range(num_layers + 1)]]
    for s in range(1, stages):
        last = s == stages - 1
        row: list[tuple[float, tuple[int, ...]]] = [(inf, ())] * (num_layers + 1)
        for n in range(s + 1, num_layers + 1):
            for m in range(s, n):
                worst = max(best[-1][m][0], costs.of(n - m, False, last))
                if worst < row[n][0]:
                    row[n] = (worst, (*best[-1][m][1], m - 1))
        best.append(row)
    return best[-1][num_layers][1]


def per_stage_flops(costs: StageCosts, cut_after: tuple[int, ...], num_layers: int
                    ) -> list[int]:
    """Each stage's FLOPs per micro-batch for the cuts `cut_after`."""
    ends = [c + 1 for c in cut_after] + [num_layers]
    starts = [0, *ends[:-1]]
    n = len(ends)
    return [costs.of(e - b, i == 0, i == n - 1) for i, (b, e) in
            enumerate(zip(starts, ends, strict=True))]
