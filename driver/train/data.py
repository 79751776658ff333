"""The training data: `.npy` files of token ids in `data.train_dir`, cut into batches.

The files (every `*.npy` in the folder, 1-D integer arrays) are read in file-name order as
one stream. Sequence i is `stream[i*S : i*S + S + 1]` for S = seq_length: its first S
tokens are the inputs, its last S the labels (the inputs shifted by one); consecutive
sequences share one token, as Megatron's datasets cut them. Step k takes the global batch
`k mod B` of the B = (number of sequences) // global_batch_size whole batches, sequences
`[b*G, (b+1)*G)` in order, so the tokens of a step depend on nothing but the step.

A global batch is cut for the ranks in one fixed order: DP shards of consecutive sequences
(rank d gets rows `[d*G/DP, (d+1)*G/DP)`), each shard into micro-batches of consecutive rows
(`micro_batches`), so every layout trains on the same tokens in every step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.npy import read_npy
from nxcc.driver.train.errors import TrainConfigError

IGNORE_INDEX = -100

KEY = "data.train_dir"


def npy_files(train_dir: str, key: str = KEY) -> list[str]:
    """The `.npy` files of `train_dir`, in file-name order."""
    if not os.path.isdir(train_dir):
        what = "is not a folder" if os.path.exists(train_dir) else "does not exist"
        raise TrainConfigError(key, f"{train_dir} {what}")
    names = sorted(n for n in os.listdir(train_dir) if n.endswith(".npy"))
    if not names:
        raise TrainConfigError(key, f"{train_dir} holds no .npy files of token ids (nor a "
                                    "Hugging Face dataset saved with save_to_disk)")
    return [os.path.join(train_dir, n) for n in names]


def _read_ids(path: str, vocab_size: int | None, key: str = KEY) -> np.ndarray:
    try:  # the one safe reader: its size is the file's, checked against the header
        arr = read_npy(path, max_bytes=None, mmap=True)
    except UserFileError as exc:
        raise TrainConfigError(key, f"is not a readable .npy file: {exc}") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu":
        dtype = getattr(arr, "dtype", type(arr).__name__)
        raise TrainConfigError(key, f"{path} holds {dtype}, not integer token ids")
    if arr.ndim != 1:
        raise TrainConfigError(key, f"{path} has shape {arr.shape}, not a 1-D array of "
                                    "token ids")
    ids = np.asarray(arr, dtype=np.int64)
    if ids.size and (ids.min() < 0 or (vocab_size is not None and ids.max() >= vocab_size)):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        limit = f" (model.vocab_size {vocab_size})" if vocab_size is not None else ""
        raise TrainConfigError(key, f"{path} holds token id {bad}, outside "
                                    f"[0, {vocab_size if vocab_size is not None else 'inf'})"
                                    f"{limit}")
    return ids


def load_tokens(train_dir: str, vocab_size: int | None = None, key: str = KEY) -> np.ndarray:
    """The token stream of `train_dir` as int64; TrainConfigError naming the file for a
    missing folder, no .npy, a non-integer or non-1-D array, an id outside the vocabulary."""
    parts = [_read_ids(p, vocab_size, key) for p in npy_files(train_dir, key)]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class Batches:
    """The global batches of a token stream (int64 inputs and labels [G, S] per step; with
    `eod`, a position whose input is that id is not counted: label -100)."""

    tokens: np.ndarray
    seq_length: int
    global_batch_size: int
    eod: int | None = None
    key: str = KEY

    def __post_init__(self) -> None:
        needed = self.global_batch_size * self.seq_length + 1
        if self.tokens.size < needed:
            raise TrainConfigError(
                self.key, f"the corpus holds {self.tokens.size} tokens; one global batch of "
                     f"{self.global_batch_size} sequences of seq_length {self.seq_length} "
                     f"(+1 for the shifted labels) needs {needed}")

    @property
    def num_sequences(self) -> int:
        return (self.tokens.size - 1) // self.seq_length

    @property
    def batches_per_epoch(self) -> int:
        return self.num_sequences // self.global_batch_size

    def position(self, step: int) -> dict[str, int]:
        """Where step `step` (0 for the first) reads: its epoch and batch in the epoch."""
        epoch, batch = divmod(step, self.batches_per_epoch)
        return {"step": step, "epoch": epoch, "batch": batch}

    def global_batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(inputs, labels) of step `step`, each [global_batch_size, seq_length]."""
        batch = step % self.batches_per_epoch
        first = batch * self.global_batch_size
        starts = (first + np.arange(self.global_batch_size)) * self.seq_length
        index = starts[:, None] + np.arange(self.seq_length + 1)[None, :]
        windows = self.tokens[index]
        inputs, labels = windows[:, :-1], windows[:, 1:]
        if self.eod is not None:
            labels = np.where(inputs == self.eod, IGNORE_INDEX, labels)
        return inputs, labels

    def summary(self) -> dict[str, object]:
        return {"kind": "npy", "tokens": int(self.tokens.size),
                "sequences": self.num_sequences, "batches_per_epoch": self.batches_per_epoch}

    def check_ids(self, steps: int, vocab: int) -> None:
        """The stream's ids were checked when it was read (`load_tokens`)."""


def micro_batch_rows(arrays: tuple[np.ndarray, ...], dp_rank: int, dp: int,
                     micro_batch_size: int) -> list[tuple[np.ndarray, ...]]:
    """The micro-batches of data-parallel rank `dp_rank` of `dp`, in the order it runs
    them: its shard of consecutive rows of every array of the global batch `arrays`, cut
    into consecutive groups of `micro_batch_size`."""
    rows = arrays[0].shape[0]
    if rows % (dp * micro_batch_size):
        raise ValueError(f"a global batch of {rows} does not split into {dp} shards of "
                         f"micro-batches of {micro_batch_size}")
    shard = rows // dp
    lo = dp_rank * shard
    return [tuple(a[i:i + micro_batch_size] for a in arrays)
            for i in range(lo, lo + shard, micro_batch_size)]


def micro_batches(inputs: np.ndarray, labels: np.ndarray, dp_rank: int, dp: int,
                  micro_batch_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`micro_batch_rows` of a language model's (inputs, labels)."""
    return micro_batch_rows((inputs, labels), dp_rank, dp,  # type: ignore[return-value]
                            micro_batch_size)
