"""The state of a loaded model: buffers that persist between executions, fed back in place.

`ModelState` reads the manifest's ``state`` section (see `backend.program.state`): each
entry names a program input that the previous execution's output `output` feeds. The
arrays live here between executions; after one, the output array the executor returned
becomes the next input as it is (no copy). `load` replaces them all from a mapping and
refuses (NrtError INVALID) a name, shape or dtype that does not match, naming the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.ir.dtypes import DType


@dataclass(frozen=True)
class StateEntry:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    input: int
    output: int


class ModelState:
    """The persistent buffers of one loaded model (empty for an inference NEFF)."""

    def __init__(self, entries: Sequence[dict], weights: Mapping[str, np.ndarray]) -> None:
        """`entries`: the manifest's ``state`` list; `weights`: the NEFF's weights by name.
        KeyError/TypeError/ValueError if an entry is malformed."""
        self.entries = [StateEntry(e["name"], DType.from_name(e["dtype"]).numpy,
                                   tuple(e["shape"]), int(e["input"]), int(e["output"]))
                        for e in entries]
        self.arrays: dict[str, np.ndarray] = {}
        for entry, raw in zip(self.entries, entries, strict=True):
            init = raw["init"]
            if "weight" in init:
                arr = np.asarray(weights[init["weight"]])
                if arr.dtype != entry.dtype:
                    arr = arr.view(entry.dtype)
                self.arrays[entry.name] = np.array(arr.reshape(entry.shape), copy=True)
            else:
                self.arrays[entry.name] = np.zeros(entry.shape, entry.dtype)
        self.inputs = {e.input for e in self.entries}
        self.outputs = {e.output for e in self.entries}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def arguments(self, user_args: Sequence[np.ndarray], n_inputs: int) -> list[np.ndarray]:
        """The program's whole argument list: the state in its slots, `user_args` (in
        order) in the others."""
        by_slot = {e.input: self.arrays[e.name] for e in self.entries}
        rest = iter(user_args)
        return [by_slot[i] if i in by_slot else next(rest) for i in range(n_inputs)]

    def update(self, results: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Keep the aliased outputs as the new state; the other results, in order."""
        for e in self.entries:
            self.arrays[e.name] = results[e.output]
        return [r for i, r in enumerate(results) if i not in self.outputs]

    def snapshot(self) -> dict[str, np.ndarray]:
        """The current state by name (copies: later executions do not change them)."""
        return {name: np.array(arr, copy=True) for name, arr in self.arrays.items()}

    def load(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the whole state; NrtError(INVALID) naming the first mismatch."""
        for e in self.entries:
            if e.name not in arrays:
                raise NrtError(NrtStatus.INVALID, f"state file has no '{e.name}' "
                               f"({e.dtype}{list(e.shape)})")
            arr = _typed(np.asarray(arrays[e.name]), e.dtype)
            if arr.shape != e.shape:
                raise NrtError(NrtStatus.INVALID, f"state '{e.name}' has shape "
                               f"{list(arr.shape)}, the model keeps {list(e.shape)}")
            if arr.dtype != e.dtype:
                raise NrtError(NrtStatus.INVALID, f"state '{e.name}' has dtype {arr.dtype}, "
                               f"the model keeps {e.dtype}")
        unknown = sorted(set(arrays) - {e.name for e in self.entries})
        if unknown:
            raise NrtError(NrtStatus.INVALID, f"state file holds '{unknown[0]}', which is not "
                           "state of this model")
        self.arrays = {e.name: np.array(_typed(np.asarray(arrays[e.name]), e.dtype), copy=True)
                       for e in self.entries}


def _typed(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`arr`, or its bytes viewed as `dtype` when an .npz stored it as raw bytes (numpy
    keeps bfloat16 as a 2-byte void type)."""
    if arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize and dtype.kind == "V":
        return arr.view(dtype)
    return arr


def visible_aliases(manifest: Mapping) -> list[tuple[str, str]]:
    """(input name, output name) of each alias whose buffer the caller holds (not kept as
    state): running several steps feeds the output back as that input."""
    kept = {e["input"] for e in manifest.get("state", [])}
    inputs, outputs = manifest["inputs"], manifest["outputs"]
    return [(inputs[a["input"]]["name"], outputs[a["output"]]["name"])
            for a in manifest.get("input_output_alias", []) if a["input"] not in kept]
