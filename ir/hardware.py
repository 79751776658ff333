"""The Neuron chips and instance types as published: the one table of hardware figures.

Everything in nxcc that needs a figure of the real hardware reads it here: the runtime's
simulated topology (`backend.runtime.topology`: instances, devices, cores, LNC, HBM, links),
the sharding cost model (`passes.sharding.cost_model`), the compiler's peak-HBM check and
device-time estimate (`backend.program.estimate`) and `neuronx-cc train --plan`
(`driver.plan`). Each figure carries its public source: pages of the AWS Neuron
documentation (github.com/aws-neuron/aws-neuron-sdk, published at
awsdocs-neuron.readthedocs-hosted.com), named by their path in that repository:

- [trainium]   about-neuron/arch/neuron-hardware/trainium.rst
- [nc-v2]      about-neuron/arch/neuron-hardware/neuron-core-v2.rst
- [trn1]       about-neuron/arch/neuron-hardware/trn1-arch.rst
- [trainium2]  about-neuron/arch/neuron-hardware/trainium2.rst
- [nc-v3]      about-neuron/arch/neuron-hardware/neuron-core-v3.rst
- [trn2]       about-neuron/arch/neuron-hardware/trn2-arch.rst
- [inf2chip]   about-neuron/arch/neuron-hardware/inferentia2.rst
- [inf2]       about-neuron/arch/neuron-hardware/inf2-arch.rst
- [inferentia] about-neuron/arch/neuron-hardware/inferentia.rst
- [inf1]       about-neuron/arch/neuron-hardware/inf1-arch.rst
- [trainium3]  about-neuron/arch/neuron-hardware/trainium3.rst
- [trn3-nki]   nki/about/trainium3_arch (the NKI architecture guide of Trainium3)
- [lnc]        about-neuron/arch/neuron-features/logical-neuroncore-config.rst
- [devmem]     neuron-runtime/explore/device-memory.rst

Units are bytes, bytes per second and FLOP per second. The pages write link and memory
bandwidths as "GB/sec" in some places and "GiB/sec" in others for the same figure; this
table reads them as 10^9 bytes (the difference, 7%, is inside what `driver.plan`'s link
efficiency absorbs). Where two pages disagree the comment says which was taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.ir.dtypes import DType

GiB = 1024**3
MiB = 1024**2
GB = 1e9
TERA = 1e12


@dataclass(frozen=True)
class Chip:
    """One Neuron device (chip). Rates are dense (no sparsity), per chip unless named per
    core; `tensor_flops` by operand dtype of the TensorEngine's products."""

    name: str
    core_kind: str
    generation: int
    cores: int  # physical NeuronCores
    hbm_bytes: int
    hbm_banks: int
    hbm_bytes_per_s: float
    tensor_flops: dict[DType, float] = field(default_factory=dict)
    vector_flops_per_core: float = 0.0  # VectorEngine, FP32
    scalar_flops_per_core: float = 0.0  # ScalarEngine, FP32
    link_bytes_per_s: float = 0.0  # NeuronLink, chip to chip, per chip
    runtime_bytes_per_core: int = 0  # the runtime's micro-code per physical core

    def core_hbm_bytes(self, lnc: int = 1) -> int:
        """HBM of one logical core at LNC `lnc` (the chip's HBM split evenly over its
        physical cores; a logical core holds `lnc` of them)."""
        return self.hbm_bytes * lnc // self.cores

    def core_hbm_bytes_per_s(self, lnc: int = 1) -> float:
        return self.hbm_bytes_per_s * lnc / self.cores

    def core_tensor_flops(self, dtype: DType, lnc: int = 1) -> float:
        """The TensorEngine's dense rate on one logical core for products of `dtype`
        operands (an fp8 or bf16 product at its own rate; anything wider at fp32's)."""
        rates = self.tensor_flops
        rate = rates.get(dtype) or rates.get(DType.F32, 0.0)
        return rate * lnc / self.cores

    def core_vector_flops(self, lnc: int = 1) -> float:
        """Elementwise and reduction work of one logical core: its Vector and Scalar
        engines together (FP32 rates)."""
        return (self.vector_flops_per_core + self.scalar_flops_per_core) * lnc

    @property
    def peak_bf16_per_core(self) -> float:
        """Dense BF16 FLOP/s of one physical core: the denominator of MFU as AWS's
        published training tables compute it."""
        return self.tensor_flops[DType.BF16] / self.cores


def _low_precision(bf16: float, fp8: float, fp32: float) -> dict[DType, float]:
    rates = {DType.BF16: bf16, DType.F16: bf16, DType.F32: fp32}
    for dt in (DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ):
        rates[dt] = fp8
    return rates


TRAINIUM = Chip(
    "Trainium", "NeuronCore-v2", 2,
    cores=2,  # [trainium] "Two NeuronCore-v2"
    hbm_bytes=32 * GiB,  # [trainium] "32 GiB of device memory"
    hbm_banks=2,
    hbm_bytes_per_s=820 * GB,  # [trainium] "820 GiB/sec of bandwidth"
    # [trainium] "190 FP16/BF16/cFP8/TF32 TFLOPS, and 47.5 FP32 TFLOP" per chip
    tensor_flops=_low_precision(190 * TERA, 190 * TERA, 47.5 * TERA),
    vector_flops_per_core=2.3 * TERA,  # [nc-v2] VectorEngine "2.3 TFLOPS of FP32"
    scalar_flops_per_core=2.9 * TERA,  # [nc-v2] ScalarEngine "2.9 TFLOPS of FP32"
    # [trainium2] Trainium's "Inter-chip Interconnect (GB/sec/chip)": 384; [trn1] lists the
    # same figure for trn1.32xlarge (its NeuronLink column) and 768 for trn1n.32xlarge
    link_bytes_per_s=384 * GB,
    runtime_bytes_per_core=96 * MiB,  # [devmem] "micro-code overhead of 96MB per core"
)

TRAINIUM2 = Chip(
    "Trainium2", "NeuronCore-v3", 3,
    cores=8,  # [trainium2] "eight NeuronCore-v3"
    hbm_bytes=96 * GiB,  # [trainium2] "96 GiB of device memory"
    hbm_banks=4,  # [lnc] "four 24GB HBM banks", each shared by two physical cores
    hbm_bytes_per_s=2.9e12,  # [trainium2] "2.9 TB/sec of bandwidth"
    # [trainium2] per chip: 667 BF16/FP16/TF32, 1,299 FP8, 181 FP32 TFLOPS (dense). [nc-v3]
    # gives 79 BF16 per core; the chip's figure / 8 (83.4) is taken, as for Trainium.
    tensor_flops=_low_precision(667 * TERA, 1299 * TERA, 181 * TERA),
    vector_flops_per_core=1.0 * TERA,  # [nc-v3] Vector Engines "1 TFLOPS of FP32"
    scalar_flops_per_core=1.2 * TERA,  # [nc-v3] Scalar Engines "1.2 TFLOPS of FP32"
    # [trn2] "Intra-instance NeuronLink-v3 bandwidth (GB/sec/chip)": 1,024 ([trainium2] says
    # 1.28 TB/sec per chip, counting the links between instances of an UltraServer too)
    link_bytes_per_s=1024 * GB,
    runtime_bytes_per_core=96 * MiB,  # [devmem]
)

TRAINIUM3 = Chip(
    "Trainium3", "NeuronCore-v4", 4,
    cores=8,  # [trainium3] "eight NeuronCore-v4 cores"
    hbm_bytes=144 * GiB,  # [trainium3] "144 GiB of device memory"
    hbm_banks=4,  # [trn3-nki] "4 HBM stacks"
    hbm_bytes_per_s=4.9e12,  # [trainium3] "4.9 TB/sec of bandwidth" ([trn3-nki]: 4.7)
    # [trainium3] per chip (dense): 2,517 MXFP8/MXFP4, 671 BF16/FP16/TF32, 183 FP32 TFLOPS
    tensor_flops=_low_precision(671 * TERA, 2517 * TERA, 183 * TERA),
    # Not published for NeuronCore-v4: NeuronCore-v3's Vector and Scalar rates assumed.
    vector_flops_per_core=1.0 * TERA,
    scalar_flops_per_core=1.2 * TERA,
    link_bytes_per_s=2560 * GB,  # [trainium3] NeuronLink-v4 "2.56 TB/sec bandwidth per device"
    runtime_bytes_per_core=96 * MiB,  # [devmem]
)

INFERENTIA2 = Chip(
    "Inferentia2", "NeuronCore-v2", 2,
    cores=2,  # [inf2chip] "two NeuronCore-v2 cores"
    hbm_bytes=32 * GiB,  # [inf2chip] "32GiB of high-bandwidth device memory"
    hbm_banks=2,
    hbm_bytes_per_s=820 * GB,  # [inf2chip] "820 GiB/sec"
    tensor_flops=_low_precision(190 * TERA, 190 * TERA, 47.5 * TERA),  # [inf2chip]
    vector_flops_per_core=2.3 * TERA,  # [nc-v2]
    scalar_flops_per_core=2.9 * TERA,  # [nc-v2]
    link_bytes_per_s=192 * GB,  # [inf2] "NeuronLink-v2 chip-to-chip (GiB/sec/chip)": 192
    runtime_bytes_per_core=96 * MiB,  # [devmem]
)

INFERENTIA = Chip(  # nxcc compiles nothing for NeuronCore-v1; kept for the runtime's examples
    "Inferentia", "NeuronCore-v1", 1,
    cores=4,  # [inferentia] "Four NeuronCore-v1 cores"
    hbm_bytes=8 * GiB,  # [inferentia] "8GiB of device DRAM memory"
    hbm_banks=1,
    hbm_bytes_per_s=50 * GB,  # [inferentia] "50 GiB/sec of bandwidth"
    tensor_flops={DType.BF16: 64 * TERA, DType.F16: 64 * TERA},  # [inferentia] 64 TFLOPS
    link_bytes_per_s=32 * GB,  # [inf1] "NeuronLink-v1 chip-to-chip bandwidth": 32
)


@dataclass(frozen=True)
class InstanceType:
    """An EC2 instance type: its chips, how they are linked, and its network and host.
    `topology` is "single", "ring", "torus" (2D, `torus_shape` rows x columns) or "switch"
    (every chip reaches every other)."""

    name: str
    family: str
    chip: Chip
    chips: int
    topology: str
    torus_shape: tuple[int, int] | None = None
    lnc_choices: tuple[int, ...] = (1,)
    default_lnc: int = 1
    efa_bytes_per_s: float = 0.0  # 0: no EFA (one instance only)
    host_memory_bytes: int = 0
    link_bytes_per_s: float | None = None  # NeuronLink per chip, when not the chip's own

    @property
    def chip_link_bytes_per_s(self) -> float:
        return self.chip.link_bytes_per_s if self.link_bytes_per_s is None \
            else self.link_bytes_per_s

    def logical_cores(self, lnc: int) -> int:
        return self.chips * self.chip.cores // lnc


def _gbps(gigabits: float) -> float:
    return gigabits * 1e9 / 8


def _trn1(name: str, chips: int, family: str = "trn1", efa: float = 0.0,
          link: float | None = None) -> InstanceType:
    torus = chips == 16  # [trn1] "connected in a 2D Torus topology"
    return InstanceType(name, family, TRAINIUM, chips, "torus" if torus else "single",
                        (4, 4) if torus else None, efa_bytes_per_s=efa,
                        host_memory_bytes=(512 if torus else 32) * GiB,  # [trn1] host memory
                        link_bytes_per_s=link)


def _inf2(name: str, chips: int, host_gib: int) -> InstanceType:
    return InstanceType(name, "inf2", INFERENTIA2, chips, "ring" if chips > 1 else "single",
                        host_memory_bytes=host_gib * GiB)  # [inf2] host memory


def _trn2(name: str, chips: int, host_gib: int, efa: float) -> InstanceType:
    torus = chips == 16  # [trn2] "connected using a 4x4, 2D Torus topology"
    return InstanceType(name, "trn2", TRAINIUM2, chips, "torus" if torus else "single",
                        (4, 4) if torus else None, lnc_choices=(1, 2), default_lnc=2,  # [lnc]
                        efa_bytes_per_s=efa, host_memory_bytes=host_gib * GiB)


def _trn3(name: str, chips: int) -> InstanceType:
    """[trainium3]: Trn3 UltraServers (Gen1: four servers of 16 devices; Gen2: 36 of 4) join
    their devices all-to-all through NeuronSwitch; AWS publishes no instance sizes, so
    `trn3-server` (one Gen1 server) is nxcc's name. LNC 1 or 2, 2 by default as on trn2.
    Its EFA bandwidth and host memory are not published: trn2.48xlarge's EFA figure is
    assumed (so that several servers can be planned) and the host memory left unknown."""
    return InstanceType(name, "trn3", TRAINIUM3, chips, "switch", lnc_choices=(1, 2),
                        default_lnc=2, efa_bytes_per_s=_gbps(3200))


def _inf1(name: str, chips: int, host_gib: int) -> InstanceType:
    return InstanceType(name, "inf1", INFERENTIA, chips, "ring" if chips > 1 else "single",
                        host_memory_bytes=host_gib * GiB)  # [inf1] host memory


INSTANCE_TYPES: dict[str, InstanceType] = {
    i.name: i
    for i in (
        # [trn1] EFA: trn1.2xlarge "up-to 25" Gbps and no NeuronLink (treated as none: one
        # instance), trn1.32xlarge 800, trn1n.32xlarge 1,600 Gbps; NeuronLink 384 / 768
        _trn1("trn1.2xlarge", 1),
        _trn1("trn1.32xlarge", 16, efa=_gbps(800)),
        _trn1("trn1n.32xlarge", 16, family="trn1n", efa=_gbps(1600), link=768 * GB),
        _inf2("inf2.xlarge", 1, 16),
        _inf2("inf2.8xlarge", 1, 128),
        _inf2("inf2.24xlarge", 6, 384),
        _inf2("inf2.48xlarge", 12, 768),
        # [trn2] trn2.48xlarge: 16 chips, 2,048 GiB host memory, EFAv3 3,200 Gbps;
        # trn2.3xlarge (one chip) has no EFA
        _trn2("trn2.3xlarge", 1, 128, 0.0),
        _trn2("trn2.48xlarge", 16, 2048, _gbps(3200)),
        _trn3("trn3-server", 16),
        _inf1("inf1.xlarge", 1, 8),
        _inf1("inf1.6xlarge", 4, 48),
    )
}

#: The chip each compile target (`--target`) runs on.
TARGET_CHIPS: dict[str, Chip] = {"trn1": TRAINIUM, "trn1n": TRAINIUM, "inf2": INFERENTIA2,
                                 "trn2": TRAINIUM2, "trn3": TRAINIUM3}

#: The instance a target's family means when none is named.
DEFAULT_INSTANCE_FOR_TARGET = {
    "trn1": "trn1.32xlarge",
    "trn1n": "trn1n.32xlarge",
    "inf2": "inf2.48xlarge",
    "trn2": "trn2.48xlarge",
    "trn3": "trn3-server",
}
