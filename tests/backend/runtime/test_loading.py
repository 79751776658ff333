"""Load-time settings: NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS, NEURON_RT_VALIDATE_HASH,
NEURON_RT_ALLOW_LEGACY_NEFF and NEURON_LOGICAL_NC_CONFIG against the NEFF's lnc_size."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.status import NrtError, NrtStatus
from tests.backend.runtime.neffs import WEIGHT_SIZE

WEIGHT_BYTES = WEIGHT_SIZE * WEIGHT_SIZE * 4
REPLICAS = 4


def replica_weights(model) -> list[np.ndarray]:
    return [next(iter(r.model.weights.values())) for r in model.replicas]


def load_measured(rt, neff: Path):
    """(model, bytes allocated by loading `neff` onto REPLICAS cores)."""
    data = neff.read_bytes()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        model = rt.load(data, nc_count=REPLICAS)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return model, grown


def test_shared_weights_one_copy_for_all_replicas(start, weights) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="4",
               NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS="TRUE")
    model, grown = load_measured(rt, weights)
    w = replica_weights(model)
    assert all(np.shares_memory(w[0], other) for other in w[1:])
    assert grown < 2 * WEIGHT_BYTES, grown
    x = {"x": np.ones((1, WEIGHT_SIZE), np.float32)}
    outs = [rt.execute(model, x)["y"] for _ in range(REPLICAS)]
    assert sorted(model.history) == [0, 1, 2, 3]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_without_shared_weights_each_replica_has_its_copy(start, weights) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="4")
    model, grown = load_measured(rt, weights)
    w = replica_weights(model)
    assert not any(np.shares_memory(w[0], other) for other in w[1:])
    assert grown > REPLICAS * WEIGHT_BYTES * 0.9, grown


def corrupt(neff: Path, dst: Path) -> Path:
    data = bytearray(neff.read_bytes())
    data[172] ^= 0xFF  # the header's payload SHA-256
    dst.write_bytes(bytes(data))
    return dst


def test_validate_hash(start, spin, tmp_path) -> None:
    bad = corrupt(spin, tmp_path / "bad.neff")
    rt = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_NUM_CORES="1")
    assert rt.load(bad).cores == [0]  # not checked by default
    checking = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_NUM_CORES="1",
                     NEURON_RT_VALIDATE_HASH="TRUE")
    with pytest.raises(NrtError) as err:
        checking.load(bad)
    assert err.value.status == NrtStatus.INVALID and "hash mismatch" in str(err.value)
    assert checking.load(spin).cores == [1]


def test_legacy_neff_needs_allow_legacy(start, spin) -> None:
    trn2 = {"NXCC_INSTANCE_TYPE": "trn2.3xlarge", "NEURON_LOGICAL_NC_CONFIG": "1"}
    rt = start(NEURON_RT_NUM_CORES="1", **trn2)
    with pytest.raises(NrtError) as err:
        rt.load(spin)  # compiled for trn1
    assert err.value.status == NrtStatus.UNSUPPORTED_NEFF_VERSION
    assert "NEURON_RT_ALLOW_LEGACY_NEFF=TRUE" in str(err.value)
    legacy = start(NEURON_RT_NUM_CORES="1", NEURON_RT_ALLOW_LEGACY_NEFF="TRUE", **trn2)
    model = legacy.load(spin)
    assert int(legacy.execute(model, {"n": np.array(4, np.int32)})["count"]) == 4


def test_newer_neff_never_loads_on_an_older_instance(start, spin_trn2) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_ALLOW_LEGACY_NEFF="TRUE")
    with pytest.raises(NrtError) as err:
        rt.load(spin_trn2)
    assert err.value.status == NrtStatus.UNSUPPORTED_NEFF_VERSION
    assert "newer architecture" in str(err.value)


def test_trn1_and_inf2_neffs_share_an_architecture(start, spin) -> None:
    rt = start(NXCC_INSTANCE_TYPE="inf2.xlarge")
    assert rt.load(spin).cores == [0]


def test_lnc1_neff_on_trn2_default_lnc2_names_both_fixes(start, spin_trn2) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn2.3xlarge")
    with pytest.raises(NrtError) as err:
        rt.load(spin_trn2)
    msg = str(err.value)
    assert err.value.status == NrtStatus.INVALID
    assert "logical NeuronCore config 1" in msg and "is 2" in msg
    assert "recompile with -lnc 2" in msg and "set NEURON_LOGICAL_NC_CONFIG=1" in msg


def test_lnc2_neff_with_lnc1_runtime_names_both_fixes(start, spin_trn2_lnc2) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn2.3xlarge", NEURON_LOGICAL_NC_CONFIG="1")
    with pytest.raises(NrtError) as err:
        rt.load(spin_trn2_lnc2)
    msg = str(err.value)
    assert "config 2" in msg and "NEURON_LOGICAL_NC_CONFIG is 1" in msg
    assert "recompile with -lnc 1" in msg and "set NEURON_LOGICAL_NC_CONFIG=2" in msg


def test_lnc2_neff_loads_on_one_logical_core(start, spin_trn2_lnc2) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn2.3xlarge")
    assert rt.cores == (0, 1, 2, 3)
    model = rt.load(spin_trn2_lnc2)
    assert model.cores == [0] and model.needed == 1
    assert int(rt.execute(model, {"n": np.array(9, np.int32)})["count"]) == 9
