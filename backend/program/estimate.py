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
that streams more than it computes), each published rate scaled by the compute efficiency.
`collective_seconds` is the ring formulas' bytes (`passes.sharding.cost_model.rank_traffic`)
over the bandwidth a rank has on the link that carries them, plus a latency per step of
the ring.

`peak_hbm(module)` is what a core's program needs in HBM at its peak (weights, inputs,
arena, collective buffers): the compiler refuses a program over the core's HBM
(`driver.hbm_check`). `device_seconds` is its estimated time on the core.

The three constants (`Efficiency`): the achieved fraction of the engines' published rates,
the achieved fraction of a link's published bandwidth, and the latency of one step of a
ring collective. They are the only numbers here not taken from a published page;
docs/estimates.md says how they were chosen.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nxcc.backend.program.collectives import COLLECTIVE_OPS, PAIRED_OPS, collectives_of
from nxcc.backend.program.memory_plan import plan_memory
from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Module
from nxcc.ir.dtypes import DType
from nxcc.ir.flops import convolution_flops, op_flops, program_flops
from nxcc.ir.hardware import Chip
from nxcc.ir.rewrite import reachable_functions
from nxcc.passes.sharding.cost_model import rank_traffic

TENSOR_OPS = frozenset({ops.dot_general, ops.convolution})


@dataclass(frozen=True)
class Efficiency:
    """The model's three constants (see the module docstring): `compute`, the achieved
    fraction of the engines' published rates (TensorEngine, Vector and Scalar engines,
    HBM bandwidth); `link`, of a link's published bandwidth; `step_latency_s`, the
    seconds each step of a ring collective (or a transfer) takes besides its bytes."""

    compute: float
    link: float
    step_latency_s: float


#: The constants `train --plan`, the compiler's device-time estimate and `inspect-neff`
#: use: chosen against AWS's published trn1 training throughput (docs/estimates.md).
EFFICIENCY = Efficiency(compute=0.45, link=0.75, step_latency_s=10e-6)


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

    @property
    def steps(self) -> int:
        """The ring's steps: 2 (n-1) for an all-reduce (a reduce-scatter, then an
        all-gather), n - 1 for an all-gather or a reduce-scatter, 1 for a transfer."""
        n = self.group
        if self.kind in PAIRED_OPS or n <= 1:
            return 1 if n > 1 or self.kind in PAIRED_OPS else 0
        return 2 * (n - 1) if self.kind == "all_reduce" else n - 1


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
        if op.opdef is ops.fused_convolution:  # the products, then the vector epilogue
            work.tensor_flops[op.operands[0].type.dtype] += convolution_flops(op)
            work.vector_flops += program_flops(op)
        elif op.opdef in TENSOR_OPS:
            work.tensor_flops[op.operands[0].type.dtype] += op_flops(op)
        elif op.opdef is ops.constant:
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
    tensor = sum(flops / (chip.core_tensor_flops(dt, lnc) * efficiency.compute)
                 for dt, flops in work.tensor_flops.items() if flops)
    return tensor + work.vector_flops / (chip.core_vector_flops(lnc) * efficiency.compute)


def compute_seconds(work: Work, chip: Chip, lnc: int = 1,
                    efficiency: Efficiency = EFFICIENCY) -> float:
    """Seconds one logical core at LNC `lnc` of `chip` computes `work` (no collectives):
    its engines' time, or its HBM traffic's when that is longer."""
    memory = work.hbm_bytes / (chip.core_hbm_bytes_per_s(lnc) * efficiency.compute)
    return max(engine_seconds(work, chip, lnc, efficiency), memory)


def collective_seconds(collective: Collective, bytes_per_s: float,
                       efficiency: Efficiency = EFFICIENCY) -> float:
    """Seconds of one collective (or transfer) for a rank with `bytes_per_s` of link
    bandwidth: its bytes at the achieved bandwidth, and each of its ring's steps' latency
    (the alpha-beta model of collectives)."""
    if collective.traffic == 0:
        return 0.0
    return collective.traffic / (bytes_per_s * efficiency.link) + \
        collective.steps * efficiency.step_latency_s


@dataclass(frozen=True)
class PeakHbm:
    """What one core's program needs in HBM at its peak: its weights (the NEFF's
    constants), its inputs, its arena (every intermediate and output the memory plan
    places, `memory_plan.plan_memory`, as the lowering plans it; the largest called
    computation's arena added) and the buffers of its largest collective (operand and
    result)."""

    weights: int
    inputs: int
    arena: int
    collectives: int

    @property
    def total(self) -> int:
        return self.weights + self.inputs + self.arena + self.collectives

    def to_json(self) -> dict[str, int]:
        return {"weights": self.weights, "inputs": self.inputs, "arena": self.arena,
                "collective_buffers": self.collectives, "total": self.total}


def peak_hbm(module: Module) -> PeakHbm:
    """The peak HBM of `module`'s program on its core (see `PeakHbm`)."""
    weights = 0
    arenas = []
    for name in reachable_functions(module):
        fn = module.functions[name]
        planned = {id(r) for op in fn.body if op.opdef is not ops.constant for r in op.results}
        arenas.append(plan_memory(fn, planned).arena_bytes)
        for op in fn.body:
            value = op.attrs.get("value") if op.opdef is ops.constant else None
            if isinstance(value, Dense) and not value.is_splat:
                weights += value.type.nbytes
    entry = module.entry_function
    largest = 0
    for name in reachable_functions(module):
        for op in module.functions[name].body:
            if op.opdef in COLLECTIVE_OPS and op.opdef not in (ops.send, ops.recv_done):
                largest = max(largest, sum(v.type.nbytes for v in op.operands)
                              + sum(r.type.nbytes for r in op.results))
    return PeakHbm(weights, sum(p.type.nbytes for p in entry.params),
                   arenas[0] + max(arenas[1:], default=0), largest)


def device_seconds(module: Module, chip: Chip, lnc: int = 1,
                   efficiency: Efficiency = EFFICIENCY) -> float:
    """Estimated seconds of one execution of `module`'s program on a core of `chip`: its
    compute, and its collectives over NeuronLink within an instance (each core's share of
    its chip's link bandwidth)."""
    work = program_work(module)
    link = chip.link_bytes_per_s * lnc / chip.cores if chip.link_bytes_per_s else \
        chip.core_hbm_bytes_per_s(lnc)
    return compute_seconds(work, chip, lnc, efficiency) + sum(
        collective_seconds(c, link, efficiency) for c in work.collectives)
