"""The global batches of a run from any of its data sources, and its validation batches.

Every source gives, for step k, (inputs, labels) int64 [global_batch_size, seq_length],
labels -100 where a position is not counted:

* `.npy` token streams (`data.Batches`);
* Megatron indexed datasets (`megatron_data`): step k takes samples k*G .. (k+1)*G - 1 of
  the split's (blended) samples, as NxD's Megatron sampler with consumed_samples k*G;
  a sample of S + 1 tokens gives inputs = its first S, labels = its last S (with
  `no_seqlen_plus_one_input_tokens`, S tokens and the last label not counted); with
  `data.eod_mask_loss` a position whose input is the end-of-document token is not counted
  (NeMo's loss_mask);
* a `save_to_disk` dataset (`hf_dataset`): rows k*G .. (k+1)*G - 1, as NxD's HF data module
  (a DistributedSampler without shuffling) reads them, from the start again after the
  last whole batch.

`BatchSource.check_ids(steps, vocab)` reads every batch those steps use and refuses a
token id outside [0, vocab) naming the source, so a run fails before its first step, never
in the middle; validation always reads the first `limit` batches of its source, as NxD's
validation loader restarts at sample 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.hf_dataset import IGNORE

CHECK_ROWS = 4096  # rows read at once when checking token ids


class Rows(Protocol):
    def __len__(self) -> int: ...

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


def mask_eod(inputs: np.ndarray, labels: np.ndarray, eod: int) -> np.ndarray:
    """`labels` with the positions whose input is `eod` not counted."""
    out = labels.copy()
    out[inputs == eod] = IGNORE
    return out


class MegatronRows:
    """A `megatron_data.SampleSet` as (inputs, labels) rows."""

    def __init__(self, samples, extra: int, eod: int | None) -> None:  # noqa: ANN001
        self.samples, self.extra, self.eod = samples, extra, eod

    def __len__(self) -> int:
        return len(self.samples)

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        text = self.samples.tokens(indices)
        if self.extra:
            inputs, labels = text[:, :-1].copy(), text[:, 1:].copy()
        else:
            inputs, labels = text.copy(), np.roll(text, -1, axis=1)
            labels[:, -1] = -1
        labels[labels == -1] = IGNORE
        inputs[inputs == -1] = 0
        if self.eod is not None:
            labels = mask_eod(inputs, labels, self.eod)
        return inputs, labels


@dataclass
class SampleBatches:
    """Global batches of consecutive rows of `rows` (see the module docstring)."""

    rows: Rows
    global_batch_size: int
    name: str
    kind: str

    def __post_init__(self) -> None:
        if len(self.rows) < self.global_batch_size:
            raise TrainConfigError(self.name, f"{self.kind} holds {len(self.rows)} "
                                              f"sequences; one global batch needs "
                                              f"{self.global_batch_size}")

    @property
    def num_sequences(self) -> int:
        return len(self.rows)

    @property
    def batches_per_epoch(self) -> int:
        return len(self.rows) // self.global_batch_size

    def position(self, step: int) -> dict[str, int]:
        epoch, batch = divmod(step, self.batches_per_epoch)
        return {"step": step, "epoch": epoch, "batch": batch}

    def global_batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        first = (step % self.batches_per_epoch) * self.global_batch_size
        return self.rows.batch(np.arange(first, first + self.global_batch_size))

    def summary(self) -> dict[str, object]:
        return {"kind": self.kind, "sequences": self.num_sequences,
                "batches_per_epoch": self.batches_per_epoch}

    def check_ids(self, steps: int, vocab: int) -> None:
        """Refuse a token id outside [0, vocab) in the batches of steps 0 .. steps - 1."""
        rows = min(steps, self.batches_per_epoch) * self.global_batch_size
        for lo in range(0, rows, CHECK_ROWS):
            inputs, labels = self.rows.batch(np.arange(lo, min(lo + CHECK_ROWS, rows)))
            counted = labels[labels != IGNORE]
            for ids in (inputs, counted):
                if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
                    bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                    raise TrainConfigError(self.name, f"{self.kind} holds token id {bad}, "
                                                      f"outside the vocabulary [0, {vocab})")
