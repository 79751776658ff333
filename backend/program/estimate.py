"""What a program costs on the real hardware: its work by engine, and the time it takes.

`program_work(module)` counts one execution of a module's entry function the way the
device runs it (`ir.flops`' counts: a called computation, such as a reduction's body, is
counted by the op that runs it):

- TensorEngine FLOPs of each dot_general and convolution, by operand dtype (a bf16 product
  at the bf16 rate, an f32 one at the fp32 rate, `ir.hardware.Chip.core_tensor_flops`);
- vector FLOPs: every other op's FLOPs (`ir.flops`: elementwise, reductions, normalisation),
  on the Vector and Scalar engines together;
- HBM bytes: the program's inputs read, its results written and its weights read once
  (an intermediate stays on chip as far as this model goes: the compiler fuses and tiles);
- collectives: each collective's kind, one rank's bytes and its group size.

`compute_seconds(work, chip, lnc, efficiency)` turns the counts into time on one logical
core: (TensorEngine time + vector time), or the HBM time when that is longer (a program
that streams more than it computes), each rate scaled by its efficiency constant.
`collective_seconds` is the ring formulas' bytes (`passes.sharding.cost_model.rank_traffic`)
over the bandwidth a rank has on the link that carries them.

The three efficiency constants (`Efficiency`): the achieved fraction of the TensorEngine's
peak, of the vector engines' and HBM's rates, and of a link's bandwidth. They are the only
numbers here not taken from a published page; docs/estimates.md says how they were chosen.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nxcc.backend.program.collectives import PAIRED_OPS, collectives_of
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Module
from nxcc.ir.dtypes import DType
from nxcc.ir.flops import op_flops
from nxcc.ir.hardware import Chip
from nxcc.passes.sharding.cost_model import rank_traffic

TENSOR_OPS = frozenset({"dot_general", "convolution"})


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of the published rates (see the module docstring)."""

    tensor: float
    vector: float
    link: float


#: The constants `train --plan`, the compiler's device-time estimate and `inspect-neff`
#: use: chosen against AWS's published trn1 training throughput (docs/estimates.md).
EFFICIENCY = Efficiency(tensor=0.55, vector=0.5, link=0.5)


@dataclass(frozen=True)
class Collective:
    """One collective of a program: kind, one rank's operand bytes, ranks per group."""

    kind: str
    bytes: int
    group: int

    @property
    def traffic(self) -> float:
        """Bytes one rank moves (the ring formulas)."""
        if self.kind in PAIRED_OPS:
            return float(self.bytes)
        return rank_traffic(self.kind, self.bytes, self.group)


@dataclass
class Work:
    """One execution's counts (see the module docstring)."""

    tensor_flops: Counter[DType] = field(default_factory=Counter)
    vector_flops: int = 0
    hbm_bytes: int = 0
    collectives: list[Collective] = field(default_factory=list)

    @property
    def flops(self) -> int:
        return sum(self.tensor_flops.values()) + self.vector_flops

    @property
    def collective_bytes(self) -> float:
        """Bytes one rank moves in the program's collectives."""
        return sum(c.traffic for c in self.collectives)

    def scaled(self, n: int) -> Work:
        """`n` executions."""
        return Work(Counter({k: v * n for k, v in self.tensor_flops.items()}),
                    self.vector_flops * n, self.hbm_bytes * n, self.collectives * n)


def program_work(module: Module) -> Work:
    """The counts of one execution of `module`'s entry function (see the docstring)."""
    work = Work()
    entry = module.entry_function
    for op in entry.body:  # a called computation's work is counted by the op calling it
        if op.opcode in TENSOR_OPS:
            work.tensor_flops[op.operands[0].type.dtype] += op_flops(op)
        elif op.opcode == "constant":
            value = op.attrs["value"]
            if isinstance(value, Dense) and not value.is_splat:
                work.hbm_bytes += value.type.nbytes
        else:
            work.vector_flops += op_flops(op)
    work.hbm_bytes += sum(p.type.nbytes for p in entry.params)
    work.hbm_bytes += sum(r.type.nbytes for r in entry.results)
    work.collectives = [Collective(c["kind"], int(c["bytes"]), _group(c))
                        for c in collectives_of(module)]
    return work


def _group(entry: dict) -> int:
    if "replica_groups" in entry:
        return max((len(g) for g in entry["replica_groups"]), default=1)
    return 2


def engine_seconds(work: Work, chip: Chip, lnc: int = 1,
                   efficiency: Efficiency = EFFICIENCY) -> float:
    """Seconds of `work`'s FLOPs on the TensorEngine and the vector engines."""
    tensor = sum(flops / (chip.core_tensor_flops(dt, lnc) * efficiency.tensor)
                 for dt, flops in work.tensor_flops.items() if flops)
    return tensor + work.vector_flops / (chip.core_vector_flops(lnc) * efficiency.vector)


def compute_seconds(work: Work, chip: Chip, lnc: int = 1,
                    efficiency: Efficiency = EFFICIENCY) -> float:
    """Seconds one logical core at LNC `lnc` of `chip` computes `work` (no collectives):
    its engines' time, or its HBM traffic's when that is longer."""
    memory = work.hbm_bytes / (chip.core_hbm_bytes_per_s(lnc) * efficiency.vector)
    return max(engine_seconds(work, chip, lnc, efficiency), memory)


def collective_seconds(collective: Collective, bytes_per_s: float,
                       efficiency: Efficiency = EFFICIENCY) -> float:
    """Seconds of one collective for a rank with `bytes_per_s` of link bandwidth."""
    if collective.traffic == 0:
        return 0.0
    return collective.traffic / (bytes_per_s * efficiency.link)
