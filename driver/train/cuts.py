"""Automatic pipeline cut points: stages of balanced compute, by the IR's FLOP counts.

Without `model.pipeline_cuts` the model is split so that the stages' compute per
micro-batch (forward + backward FLOPs of their programs, `ir.flops`) is as even as the
model's blocks allow. A block is half a layer: block 2i is layer i's attention (norm,
attention, residual add), block 2i + 1 its MLP, so a stage may start at a layer's MLP or
end after its attention; a head that weighs a large part of a layer is balanced that way
where whole layers could not be.

`stage_costs` measures the decoder's own stage programs for each kind of stage (first:
with the embedding; middle; last: with the head and loss): with one and two whole layers
(a stage's cost grows by the same amount with each further whole layer), and with an
attention block alone and an MLP block alone (the partial layers a stage may end or start
with). `balanced_cuts` picks the contiguous split over blocks that minimises the largest
stage (exact, by dynamic programming); ties go to the earliest cuts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from nxcc.compiler.decoder import DecoderConfig, build_stage, program
from nxcc.compiler.decoder import StagePlan as DecoderPlan
from nxcc.ir.flops import module_flops

FIRST, MIDDLE, LAST = 0, 1, 2


@dataclass(frozen=True)
class StageCosts:
    """FLOPs per micro-batch, per stage kind (FIRST, MIDDLE, LAST): the stage's own part
    (`base`: embedding or head, the shared tables), each whole layer, an attention block
    and an MLP block standing alone."""

    base: tuple[int, int, int]
    layer: tuple[int, int, int]
    attention: tuple[int, int, int]
    mlp: tuple[int, int, int]

    def of(self, blocks: range, first: bool, last: bool) -> int:
        """The cost of a stage holding `blocks`."""
        kind = LAST if last else (FIRST if first else MIDDLE)
        start, stop = blocks.start, blocks.stop
        cost = self.base[kind]
        if first and last:
            cost += self.base[FIRST] - self.base[MIDDLE]  # the embedding
        if start % 2 and start < stop:  # starts with a layer's MLP
            cost += self.mlp[kind]
            start += 1
        if stop % 2 and start < stop:  # ends with a layer's attention
            cost += self.attention[kind]
            stop -= 1
        return cost + (stop - start) // 2 * self.layer[kind]


def _flops(cfg: DecoderConfig, plan: DecoderPlan) -> int:
    module = build_stage(cfg, plan)
    names = ["forward_backward"] if plan.has_head else ["forward", "backward"]
    return sum(module_flops(program(module, n)) for n in names)


@lru_cache(maxsize=16)
def stage_costs(cfg: DecoderConfig, micro_batch: int, seq_length: int, recompute: str
                ) -> StageCosts:
    """The costs of `cfg`'s stages for one micro-batch (see the module docstring); `cfg`
    has at least 2 layers."""
    def cost(kind: int, first_block: int, last_block: int) -> int:
        return _flops(cfg, DecoderPlan(
            first_block=first_block, last_block=last_block, has_embedding=kind == FIRST,
            has_head=kind == LAST, recompute=recompute, micro_batch=micro_batch,
            seq_length=seq_length))

    one = [cost(k, 0, 2) for k in range(3)]
    layer = [cost(k, 0, 4) - one[k] for k in range(3)]
    base = [one[k] - layer[k] for k in range(3)]
    attention = [cost(k, 0, 1) - base[k] for k in range(3)]
    mlp = [cost(k, 1, 2) - base[k] for k in range(3)]
    return StageCosts(*(tuple(x) for x in (base, layer, attention, mlp)))  # type: ignore[arg-type]


def balanced_cuts(costs: StageCosts, num_layers: int, stages: int) -> tuple[int, ...]:
    """The first block of each stage but the first, for the split of the model's blocks
    whose largest stage cost is least (each stage at least one block)."""
    units = 2 * num_layers
    if not 1 <= stages <= units:
        raise ValueError(f"{num_layers} layers cannot make {stages} non-empty stages")
    inf = float("inf")
    # best[n]: least largest cost of the first n blocks in s + 1 stages, and its cuts
    best: list[tuple[float, tuple[int, ...]]] = [
        (costs.of(range(0, n), True, stages == 1), ()) if n else (inf, ())
        for n in range(units + 1)]
    for s in range(1, stages):
        last = s == stages - 1
        row: list[tuple[float, tuple[int, ...]]] = [(inf, ())] * (units + 1)
        for n in range(s + 1, units + 1):
            for m in range(s, n):
                worst = max(best[m][0], costs.of(range(m, n), False, last))
                if worst < row[n][0]:
                    row[n] = (worst, (*best[m][1], m))
        best = row
    return best[units][1]


def stage_blocks(cuts: tuple[int, ...], num_layers: int) -> list[range]:
    """Each stage's blocks for the cuts `cuts` (the first block of each stage but the
    first)."""
    ends = [*cuts, 2 * num_layers]
    return [range(b, e) for b, e in zip([0, *cuts], ends, strict=True)]


def per_stage_flops(costs: StageCosts, cuts: tuple[int, ...], num_layers: int) -> list[int]:
    """Each stage's FLOPs per micro-batch for the block cuts `cuts`."""
    runs = stage_blocks(cuts, num_layers)
    return [costs.of(r, i == 0, i == len(runs) - 1) for i, r in enumerate(runs)]


def layer_cuts(cut_after: tuple[int, ...]) -> tuple[int, ...]:
    """`model.pipeline_cuts` as block cuts: a stage ending with layer N ends after block
    2N + 1."""
    return tuple(2 * (c + 1) for c in cut_after)
