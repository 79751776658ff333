"""A model's named inputs as `.npy` arrays: the data of a model that does not read tokens.

A model built from `nxcc.nxd` declares its inputs (`Model.input`: name, per-example shape,
dtype). Unless they are the language model's `tokens` and `labels` (fed from the token
sources, `batches.py`), `data.train_dir` (and `data.val_dir`) is a folder holding one
`NAME.npy` per input: N examples stacked on the first axis, the rest of the shape the
input's, all with the same N. Integer inputs need integer arrays whose values fit the
input's type; floating-point inputs take floating-point or integer arrays. An input that
indexes an embedding or a loss's classes (`InputSpec.bound`) must hold ids in [0, bound)
(or the loss's ignored value). Step k takes examples [b G, (b + 1) G) of every array, for
b = k mod (N // G) and G the global batch size, so every layout sees the same examples.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.driver.train.errors import TrainConfigError
from nxcc.nxd.model import InputSpec


def _read(path: str, key: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise TrainConfigError(key, f"{path} is missing (one .npy per input of the model)")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise TrainConfigError(key, f"{path} is not a readable .npy file ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise TrainConfigError(key, f"{path} does not hold one array")
    return arr


def _check(arr: np.ndarray, spec: InputSpec, path: str, key: str) -> None:
    want = spec.type.shape[1:]
    if arr.ndim != len(want) + 1 or tuple(arr.shape[1:]) != tuple(want):
        raise TrainConfigError(key, f"{path} has shape {list(arr.shape)}; input "
                                    f"{spec.name!r} takes [N, {', '.join(map(str, want))}]"
                               .replace("[N, ]", "[N]"))
    dtype = spec.type.dtype
    if dtype.is_integer and arr.dtype.kind not in "iu":
        raise TrainConfigError(key, f"{path} holds {arr.dtype}; input {spec.name!r} takes "
                                    f"integers ({dtype})")
    if dtype.is_float and arr.dtype.kind not in "iuf":
        raise TrainConfigError(key, f"{path} holds {arr.dtype}; input {spec.name!r} takes "
                                    f"numbers ({dtype})")
    if arr.size == 0:
        return
    if dtype.is_integer:
        lo, hi = int(arr.min()), int(arr.max())
        info = np.iinfo(dtype.numpy)
        if lo < info.min or hi > info.max:
            raise TrainConfigError(key, f"{path} holds {lo if lo < info.min else hi}, outside "
                                        f"input {spec.name!r}'s {dtype}")
    if spec.bound is not None:
        ids = np.asarray(arr)
        if spec.ignore is not None:
            ids = ids[ids != spec.ignore]
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= spec.bound):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            allowed = "" if spec.ignore is None else f" (or {spec.ignore})"
            raise TrainConfigError(key, f"{path} holds id {bad}, outside [0, {spec.bound})"
                                        f"{allowed} for input {spec.name!r}")


@dataclass
class ArrayBatches:
    """Global batches of the arrays in `folder` for the model's `inputs` (see the module
    docstring), read and checked when made."""

    folder: str
    inputs: Sequence[InputSpec]
    global_batch_size: int
    key: str = "data.train_dir"

    def __post_init__(self) -> None:
        if not os.path.isdir(self.folder):
            what = "is not a folder" if os.path.exists(self.folder) else "does not exist"
            raise TrainConfigError(self.key, f"{self.folder} {what}")
        self.arrays: list[np.ndarray] = []
        for spec in self.inputs:
            path = os.path.join(self.folder, f"{spec.name}.npy")
            arr = _read(path, self.key)
            _check(arr, spec, path, self.key)
            self.arrays.append(arr)
        counts = {a.shape[0] for a in self.arrays}
        if len(counts) > 1:
            sizes = ", ".join(f"{s.name} {a.shape[0]}" for s, a in
                              zip(self.inputs, self.arrays, strict=True))
            raise TrainConfigError(self.key, f"the arrays of {self.folder} hold different "
                                             f"numbers of examples ({sizes})")
        if self.num_sequences < self.global_batch_size:
            raise TrainConfigError(self.key, f"{self.folder} holds {self.num_sequences} "
                                             f"examples; one global batch needs "
                                             f"{self.global_batch_size}")

    @property
    def num_sequences(self) -> int:
        return int(self.arrays[0].shape[0]) if self.arrays else 0

    @property
    def batches_per_epoch(self) -> int:
        return self.num_sequences // self.global_batch_size

    def position(self, step: int) -> dict[str, int]:
        epoch, batch = divmod(step, self.batches_per_epoch)
        return {"step": step, "epoch": epoch, "batch": batch}

    def global_batch(self, step: int) -> tuple[np.ndarray, ...]:
        """Every input's rows of step `step`, in the model's input order."""
        first = (step % self.batches_per_epoch) * self.global_batch_size
        return tuple(np.asarray(a[first:first + self.global_batch_size]) for a in self.arrays)

    def summary(self) -> dict[str, object]:
        return {"kind": "arrays", "inputs": [s.name for s in self.inputs],
                "sequences": self.num_sequences, "batches_per_epoch": self.batches_per_epoch}

    def check_ids(self, steps: int, vocab: int) -> None:
        """Every id was checked when the arrays were read."""
