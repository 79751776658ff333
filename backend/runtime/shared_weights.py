"""NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS: one copy of a NEFF's weights in the process.

The runtime-configuration seed: "Share weights when loading multiple instance versions of the
same model on different NeuronCores". With the variable TRUE, every load of the same NEFF in
this process (the replicas of one load, and separate loads of it, through one runtime or
several) gets the same weight arrays; the copy lives as long as some loaded model holds it.
Two NEFFs are the same when their payloads have the same digest (the header's hash field,
computed over the payload as read, so a header that lies does not make two NEFFs share).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from nxcc.backend.neff import NeffFile
from nxcc.backend.runtime.model import read_weights


class WeightSet(dict[str, np.ndarray]):
    """One NEFF's weights by name, shared by its loads (a dict that can be weakly held)."""


class SharedWeights:
    """The process's weight sets by payload digest, each kept while a model holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: weakref.WeakValueDictionary[bytes, WeightSet] = \
            weakref.WeakValueDictionary()

    def of(self, neff: NeffFile) -> WeightSet:
        """The weights of `neff`: the set already loaded for the same payload, else read now
        (NeffError when they fail their checks, as `read_weights`)."""
        key = neff.digest()
        with self._lock:  # one reader per set: a concurrent load of the same NEFF waits
            found = self._sets.get(key)
            if found is None:
                found = WeightSet(read_weights(neff))
                self._sets[key] = found
            return found

    def __len__(self) -> int:
        return len(self._sets)


SHARED_WEIGHTS = SharedWeights()
"""This process's shared weight sets."""
