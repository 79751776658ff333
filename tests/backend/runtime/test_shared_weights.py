"""NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS across separate loads of the same NEFF: one copy
of the weight arrays in the process (the seed's "multiple instance versions of the same model
on different NeuronCores")."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np

import nxcc
from nxcc.backend.runtime.shared_weights import SHARED_WEIGHTS
from tests.backend.runtime.neffs import WEIGHT_SIZE, weights_neff

TRN1 = {"NXCC_INSTANCE_TYPE": "trn1.32xlarge", "NEURON_RT_NUM_CORES": "4"}
X = {"x": np.ones((1, WEIGHT_SIZE), np.float32)}


def weight_arrays(model) -> list[np.ndarray]:
    """What the executors of every replica compute with: their weight slots' arrays."""
    out = []
    for replica in model.replicas:
        for executor in replica.model.executors:
            for fn in executor.functions.values():
                out += [a for a in fn.fixed.values() if a.size == WEIGHT_SIZE * WEIGHT_SIZE]
    return out


def test_separate_loads_share_one_copy(start, weights) -> None:
    rt = start(NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS="TRUE", **TRN1)
    first, second = rt.load(weights), rt.load(weights.read_bytes())  # a path, then bytes
    assert first.cores != second.cores  # two models on two NeuronCores
    a, b = weight_arrays(first), weight_arrays(second)
    assert a and b and all(np.shares_memory(a[0], w) for w in a[1:] + b)
    assert np.array_equal(rt.execute(first, X)["y"], rt.execute(second, X)["y"])


def test_without_the_variable_each_load_has_its_copy(start, weights) -> None:
    rt = start(**TRN1)
    first, second = rt.load(weights), rt.load(weights)
    assert not np.shares_memory(weight_arrays(first)[0], weight_arrays(second)[0])


def test_other_neffs_never_share(start, weights, tmp_path: Path) -> None:
    other = weights_neff(tmp_path / "other.neff", target="inf2")  # same W, another payload
    rt = start(NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS="TRUE", **TRN1)
    first, second = rt.load(weights), rt.load(other)
    assert not np.shares_memory(weight_arrays(first)[0], weight_arrays(second)[0])


def test_nxcc_load_shares_and_the_copy_goes_with_the_last_model(weights, monkeypatch) -> None:
    for name, value in {**TRN1, "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS": "TRUE"}.items():
        monkeypatch.setenv(name, value)
    gc.collect()
    before = len(SHARED_WEIGHTS)
    first, second = nxcc.load(weights), nxcc.load(weights)
    assert np.shares_memory(weight_arrays(first.handle)[0], weight_arrays(second.handle)[0])
    assert len(SHARED_WEIGHTS) == before + 1
    first.close()
    second.close()
    del first, second
    gc.collect()
    assert len(SHARED_WEIGHTS) == before
