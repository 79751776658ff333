"""The one table of hardware figures: what the runtime and the estimates read from it."""

from __future__ import annotations

from nxcc.backend.runtime.topology import INSTANCES
from nxcc.driver.options import TARGETS
from nxcc.ir.dtypes import DType
from nxcc.ir.hardware import (
    INSTANCE_TYPES,
    TARGET_CHIPS,
    TRAINIUM,
    TRAINIUM2,
    TRAINIUM3,
    GiB,
)


def test_per_core_figures_follow_the_published_chip_figures() -> None:
    assert TRAINIUM.core_hbm_bytes() == 16 * GiB
    assert TRAINIUM.peak_bf16_per_core == 95e12  # AWS's MFU denominator for trn1
    assert TRAINIUM.core_tensor_flops(DType.F32) == 23.75e12
    assert TRAINIUM.core_tensor_flops(DType.F64) == 23.75e12  # wider: at fp32's rate
    assert TRAINIUM2.core_hbm_bytes(lnc=2) == 24 * GiB  # a 24 GB bank per LNC-2 core
    assert TRAINIUM2.core_hbm_bytes(lnc=1) == 12 * GiB
    assert TRAINIUM2.core_tensor_flops(DType.BF16, lnc=2) == 667e12 / 4
    assert TRAINIUM.core_vector_flops() == 5.2e12
    assert TRAINIUM3.core_hbm_bytes(lnc=2) == 36 * GiB  # 144 GiB over eight cores
    assert TRAINIUM3.core_tensor_flops(DType.BF16) == 671e12 / 8


def test_the_runtime_topology_is_built_from_the_table() -> None:
    assert set(INSTANCES) == set(INSTANCE_TYPES)
    for name, spec in INSTANCE_TYPES.items():
        inst = INSTANCES[name]
        assert (inst.devices, inst.cores_per_device, inst.hbm_per_device) == (
            spec.chips, spec.chip.cores, spec.chip.hbm_bytes)
        assert inst.efa == (spec.efa_bytes_per_s > 0)
    assert INSTANCES["trn2.48xlarge"].logical_cores(2) == 64
    assert INSTANCE_TYPES["trn1n.32xlarge"].efa_bytes_per_s == 2 * INSTANCE_TYPES[
        "trn1.32xlarge"].efa_bytes_per_s
    assert set(TARGET_CHIPS) == set(TARGETS)  # every compile target has its chip
