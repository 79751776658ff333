"""A tokenized Hugging Face dataset saved with `datasets.save_to_disk`, read memory-mapped.

NxD Training's HF configs point `data.train_dir` (and `data.val_dir`) at such a folder and
load it with `datasets.load_from_disk`. The folder holds `state.json` (its `_data_files`
list the Arrow files in order), `dataset_info.json` and the Arrow files themselves
(`data-00000-of-00001.arrow`, ...: Arrow IPC streams); a `DatasetDict` holds
`dataset_dict.json` and one such folder per split (its `train` split is read). Each row's
`input_ids` is one sequence of `seq_length` token ids; an optional `labels` column (-100:
ignored) stands for them in the loss, and an optional `attention_mask` marks padding.

The files are read through pyarrow (the `data` extra: `pip install nxcc[data]`), memory
mapped: a batch reads only its rows. As NxD's causal language models do (Hugging Face's
loss), position t predicts label t + 1, so a row of S ids gives S - 1 predictions: the
labels handed to the model are the row's labels shifted left by one, the last -100; a
position whose attention_mask is 0 is not counted either (right padding then gives exactly
Hugging Face's loss; the attention itself stays causal over the whole row).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from nxcc.driver.train.errors import TrainConfigError

IGNORE = -100


def is_hf_dataset(folder: str) -> bool:
    """Whether `folder` looks like `save_to_disk` output (a dataset or a DatasetDict)."""
    return any(os.path.isfile(os.path.join(folder, n)) for n in
               ("state.json", "dataset_dict.json"))


def _pyarrow(key: str):  # noqa: ANN202 (the module, imported only when needed)
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401
    except ImportError:
        raise TrainConfigError(key, "reading a Hugging Face dataset needs pyarrow (pip "
                                    "install 'nxcc[data]')") from None
    return pyarrow


def _read_json(path: str, key: str) -> object:
    if not os.path.isfile(path) or os.path.getsize(path) > 64 << 20:
        raise TrainConfigError(key, f"{path} is not a dataset's JSON file (missing, not a "
                                    "regular file, or over 64 MiB)")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise TrainConfigError(key, f"cannot read {path} ({exc.strerror})") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise TrainConfigError(key, f"{path} is not JSON") from None


def arrow_files(folder: str, key: str) -> list[str]:
    """The Arrow files of the dataset in `folder`, in order."""
    if os.path.isfile(os.path.join(folder, "dataset_dict.json")):
        info = _read_json(os.path.join(folder, "dataset_dict.json"), key)
        splits = info.get("splits") if isinstance(info, dict) else None
        if not isinstance(splits, list) or "train" not in splits:
            raise TrainConfigError(key, f"{folder} is a DatasetDict without a 'train' split "
                                        "(name the split's own folder)")
        folder = os.path.join(folder, "train")
    state = _read_json(os.path.join(folder, "state.json"), key)
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not files or not all(
            isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files):
        raise TrainConfigError(key, f"{folder}/state.json lists no data files")
    out = []
    for entry in files:
        name = entry["filename"]
        if os.path.basename(name) != name:
            raise TrainConfigError(key, f"{folder}/state.json names {name!r} outside the "
                                        "folder")
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise TrainConfigError(key, f"{path} is missing (listed in state.json)")
        out.append(path)
    return out


@dataclass
class _Column:
    """One column's rows as [rows, S] arrays (memory-mapped where Arrow allows)."""

    blocks: list[np.ndarray]


class HFRows:
    """The rows of a `save_to_disk` dataset: `batch(indices)` -> (inputs, labels) int64
    [len(indices), S] as the model takes them (see the module docstring)."""

    def __init__(self, folder: str, seq_length: int, key: str) -> None:
        pa = _pyarrow(key)
        self.folder, self.seq_length, self.key = folder, seq_length, key
        columns: dict[str, list[np.ndarray]] = {"input_ids": [], "labels": [],
                                                "attention_mask": []}
        self._tables = []
        for path in arrow_files(folder, key):
            try:
                table = pa.ipc.open_stream(pa.memory_map(path)).read_all()
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise TrainConfigError(key, f"{path} is not an Arrow stream ({exc})") \
                    from None
            self._tables.append(table)
            names = set(table.column_names)
            if "input_ids" not in names:
                raise TrainConfigError(key, f"{path} has no input_ids column (columns: "
                                            f"{', '.join(sorted(names))})")
            for name in columns:
                if name in names:
                    for chunk in table.column(name).chunks:
                        columns[name].append(self._rows(chunk, name, path, pa))
                elif columns[name]:
                    raise TrainConfigError(key, f"{path} lacks the {name} column the "
                                                "dataset's other files have")
        self.ids = columns["input_ids"]
        self.labels = columns["labels"] or None
        self.mask = columns["attention_mask"] or None
        counts = np.array([b.shape[0] for b in self.ids], np.int64)
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        if self.labels is not None and [b.shape[0] for b in self.labels] != list(counts):
            raise TrainConfigError(key, f"{folder}: labels and input_ids differ in rows")

    def _rows(self, chunk, name: str, path: str, pa) -> np.ndarray:  # noqa: ANN001
        s = self.seq_length
        if not (pa.types.is_list(chunk.type) or pa.types.is_large_list(chunk.type)) or \
                not pa.types.is_integer(chunk.type.value_type):
            raise TrainConfigError(self.key, f"{path}: column {name} is {chunk.type}, not "
                                             "lists of integers")
        if chunk.null_count or chunk.flatten().null_count:
            raise TrainConfigError(self.key, f"{path}: column {name} has null values")
        lengths = np.diff(np.asarray(chunk.offsets))
        bad = np.nonzero(lengths != s)[0]
        if bad.size:
            raise TrainConfigError(self.key, f"{path}: row {int(bad[0])} of {name} holds "
                                             f"{int(lengths[bad[0]])} ids; every row must "
                                             f"hold seq_length {s}")
        values = np.asarray(chunk.flatten())
        return values.reshape(len(chunk), s)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _take(self, blocks: list[np.ndarray], indices: np.ndarray) -> np.ndarray:
        which = np.searchsorted(self.starts, indices, side="right") - 1
        out = np.empty((indices.size, self.seq_length), np.int64)
        for b in np.unique(which):
            rows = np.nonzero(which == b)[0]
            out[rows] = blocks[b][indices[rows] - self.starts[b]]
        return out

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        indices = np.asarray(indices, np.int64)
        inputs = self._take(self.ids, indices)
        target = self._take(self.labels, indices) if self.labels is not None else \
            inputs.copy()
        if self.mask is not None:
            target[self._take(self.mask, indices) == 0] = IGNORE
        labels = np.full_like(target, IGNORE)
        labels[:, :-1] = target[:, 1:]
        return inputs, labels
