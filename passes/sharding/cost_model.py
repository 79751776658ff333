"""The sharding cost model: estimated seconds per core per execution.

Three counts, per core, each turned into time by one constant:

- FLOPs of the op as that core runs it (`ir.flops.op_flops` of the global op divided by the
  device count when the strategy splits the work);
- bytes read from HBM: every weight (a non-splat constant) an op reads, and the activations
  that dot_general and convolution stream into the matrix engine (an activation that k
  matrix ops read, the query, key and value projections of one input, is streamed once:
  each is charged 1/k). Elementwise, reduce and data-movement chains are not charged for
  activations: they fuse into their producers and their operands stay in on-chip memory;
  a collective over a split that is not the outermost dimension is (a block of heads of
  [batch, seq, hidden] is strided) and pays a relayout of its buffer, read and written once
  (`partitioning.relayout_bytes`);
- bytes each core moves in collectives, by the ring formulas on a group of n cores and a
  full (global) tensor of B bytes:

  ==================  ================================  ====================================
  all_reduce          2 (n-1)/n x B                     reduce-scatter then all-gather
  all_gather          (n-1)/n x B                       B: the gathered result
  reduce_scatter      (n-1)/n x B                       B: the full input
  all_to_all          (n-1)/n x B / n                   each core keeps 1/n of its block
  collective_permute  B / n                             each core sends its block
  ==================  ================================  ====================================

A reshard from replicated to split or to partial, and from split to partial, is local
(each core takes its block, or keeps or zeroes its copy) and costs nothing. Collective
latency is not modelled (only bytes), so a model whose weights outweigh its activations is
split by its weights even when it is tiny.

The constants describe one physical NeuronCore-v3 of a trn2 device (8 cores): 181 TFLOPS
fp32 and 2.9 TB/s of HBM per device; collectives between the two cores of a logical core go
through shared HBM with a synchronisation per step, which this model takes as
`COLLECTIVE_BYTES_PER_S`. Only the ratios matter to the choice; change them here and nowhere
else.
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.ir.dtypes import DType
from nxcc.ir.hardware import TRAINIUM2

#: FLOP/s of one physical core (fp32; trn2: 181 TFLOPS per device / 8 cores, `ir.hardware`).
PEAK_FLOPS = TRAINIUM2.core_tensor_flops(DType.F32)
#: HBM bytes/s one physical core reads (trn2: 2.9 TB/s per device / 8 cores, `ir.hardware`).
HBM_BYTES_PER_S = TRAINIUM2.core_hbm_bytes_per_s()
#: Bytes/s one core moves in a collective within a logical core (shared HBM, synchronised):
#: a modelling assumption, not a published figure.
COLLECTIVE_BYTES_PER_S = 100e9


def collective_traffic(kind: str, full_bytes: int, n: int) -> float:
    """Bytes each of `n` cores moves for collective `kind` on a global tensor of
    `full_bytes` (the ring formulas above; 0 for a group of one)."""
    if n <= 1:
        return 0.0
    share = (n - 1) / n
    if kind == "all_reduce":
        return 2 * share * full_bytes
    if kind in ("all_gather", "reduce_scatter"):
        return share * full_bytes
    if kind == "all_to_all":
        return share * full_bytes / n
    if kind == "collective_permute":
        return full_bytes / n
    raise ValueError(f"no traffic formula for collective {kind!r}")


def rank_traffic(kind: str, operand_bytes: int, n: int) -> float:
    """Bytes one of `n` ranks moves for collective `kind` whose operand on each rank has
    `operand_bytes` (the global tensor of the formulas above, seen from one rank)."""
    full = operand_bytes * n if kind in ("all_gather", "all_to_all", "collective_permute") \
        else operand_bytes
    return collective_traffic(kind, full, n)


@dataclass
class Cost:
    """Per-core counts of one execution and their time in seconds."""

    flops: float = 0.0
    weight_bytes: float = 0.0
    activation_bytes: float = 0.0
    collective_bytes: float = 0.0
    collectives: int = 0

    @property
    def seconds(self) -> float:
        return (self.flops / PEAK_FLOPS
                + (self.weight_bytes + self.activation_bytes) / HBM_BYTES_PER_S
                + self.collective_bytes / COLLECTIVE_BYTES_PER_S)

    def add(self, other: Cost) -> None:
        self.flops += other.flops
        self.weight_bytes += other.weight_bytes
        self.activation_bytes += other.activation_bytes
        self.collective_bytes += other.collective_bytes
        self.collectives += other.collectives
