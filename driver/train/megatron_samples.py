"""The samples of Megatron's GPT dataset over one indexed dataset, as NeMo builds them.

For the documents of one split (sequence indices of an `IndexedDataset`) and the number of
samples a run needs, `build_samples` makes NeMo's three index mappings
(`gpt_dataset._build_index_mappings`, which NxD Training calls):

* `doc_idx`: the documents repeated for as many epochs as the samples need (the smallest E
  with (E * tokens_per_epoch - a) // S >= num_samples, S = seq_length, a = 1 extra token
  for the shifted labels), shuffled with `np.random.RandomState(seed)`; when the last
  epoch contributes under 80% of an epoch's samples it is shuffled on its own after the
  others;
* `sample_idx` [n + 1, 2]: where each sample starts, as (index into doc_idx, offset in that
  document): sample i starts at token i * S of the documents laid end to end in doc_idx
  order, and holds S + a tokens, so consecutive samples share a token;
* `shuffle_idx`: the samples' order, a permutation from the same generator (the samples of
  a separated last epoch shuffled after the others).

The mappings are computed with numpy (the start of sample i is found by a search in the
cumulative document sizes, not by walking documents) and give the arrays NeMo's C++ helper
gives; they are cached as `.npy` files under the file names NeMo uses
(`<prefix>_<split>_indexmap_<n>ns_<S>sl_<seed>s_{doc,sample,shuffle}_idx.npy`, in
`index_mapping_dir` or beside the dataset), so a cache either tool wrote is used by both.
`GPTSamples.tokens(indices)` gives samples as int64 [len(indices), S + a].
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

import numpy as np

from nxcc.backend.neff.atomic import atomic_file
from nxcc.driver.train.megatron_index import IndexedDataset

SEPARATE_LAST_EPOCH = 0.80


@dataclass(frozen=True)
class Mappings:
    doc_idx: np.ndarray
    sample_idx: np.ndarray
    shuffle_idx: np.ndarray


def num_epochs(tokens_per_epoch: int, seq_length: int, num_samples: int, extra: int) -> int:
    """The fewest epochs that hold `num_samples` samples (NeMo's `_num_epochs`)."""
    need = num_samples * seq_length + extra
    return max(1, -(-need // tokens_per_epoch))


def _doc_idx(documents: np.ndarray, epochs: int, rng: np.random.RandomState,
             separate_last: bool) -> np.ndarray:
    if not separate_last or epochs == 1:
        out = np.tile(documents.astype(np.int32), epochs)
        rng.shuffle(out)
        return out
    first = _doc_idx(documents, epochs - 1, rng, False)
    last = _doc_idx(documents, 1, rng, False)
    return np.concatenate((first, last))


def _sample_idx(sizes: np.ndarray, doc_idx: np.ndarray, seq_length: int, epochs: int,
                tokens_per_epoch: int, drop_last: bool, extra: int) -> np.ndarray:
    """Where each sample starts (see the module docstring); the last entry is where the
    last sample ends."""
    total = epochs * tokens_per_epoch
    count = (total - extra) // seq_length if drop_last else -(-(total - extra) // seq_length)
    cum = np.zeros(doc_idx.size + 1, np.int64)
    np.cumsum(sizes[doc_idx].astype(np.int64), out=cum[1:])
    starts = np.arange(count + 1, dtype=np.int64) * seq_length
    # the document holding a sample's last token (its (S + a)-th), the offset of its end
    last_token = starts + extra - 1
    doc = np.searchsorted(cum, last_token, side="right") - 1
    doc = np.minimum(doc, doc_idx.size - 1)
    offset = starts - cum[doc]
    if not drop_last:  # the short last sample ends with the stream
        over = starts > total - extra
        doc[over] = doc_idx.size - 1
        offset[over] = sizes[doc_idx[-1]] - extra
    out = np.stack([doc, offset], axis=1).astype(np.int32)
    out[0] = (0, 0)
    return out


def _shuffle_idx(num_samples: int, total: int, rng: np.random.RandomState) -> np.ndarray:
    dtype = np.uint32 if total < np.iinfo(np.uint32).max - 1 else np.int64
    first = np.arange(num_samples, dtype=dtype)
    rng.shuffle(first)
    if num_samples == total:
        return first
    last = np.arange(num_samples, total, dtype=dtype)
    rng.shuffle(last)
    return np.concatenate((first, last))


def build_mappings(documents: np.ndarray, sizes: np.ndarray, num_samples: int,
                   seq_length: int, seed: int, drop_last: bool = True, extra: int = 1
                   ) -> Mappings:
    """NeMo's doc_idx, sample_idx and shuffle_idx (see the module docstring)."""
    tokens = int(sizes[documents].astype(np.int64).sum())
    epochs = num_epochs(tokens, seq_length, num_samples, extra)
    rng = np.random.RandomState(seed=seed)
    separate = False
    before_last = 0
    if epochs > 1:
        before_last = ((epochs - 1) * tokens - extra) // seq_length
        last_samples = num_samples - before_last
        per_epoch = (tokens - extra) // seq_length
        separate = last_samples < int(SEPARATE_LAST_EPOCH * per_epoch)
    doc_idx = _doc_idx(documents, epochs, rng, separate)
    sample_idx = _sample_idx(sizes, doc_idx, seq_length, epochs, tokens, drop_last, extra)
    built = sample_idx.shape[0] - 1
    shuffle_idx = _shuffle_idx(before_last if separate else built, built, rng)
    return Mappings(doc_idx, sample_idx, shuffle_idx)


def cache_names(prefix: str, split: str, num_samples: int, seq_length: int, seed: int,
                index_mapping_dir: str | None) -> tuple[str, str, str]:
    base = os.path.join(index_mapping_dir, os.path.basename(prefix)) if index_mapping_dir \
        else prefix
    stem = f"{base}_{split}_indexmap_{num_samples}ns_{seq_length}sl_{seed}s"
    return tuple(f"{stem}_{kind}_idx.npy"  # type: ignore[return-value]
                 for kind in ("doc", "sample", "shuffle"))


def _load_cached(names: tuple[str, str, str], documents: np.ndarray) -> Mappings | None:
    """The cached mappings when all three files exist and fit together, else None."""
    if not all(os.path.isfile(n) for n in names):
        return None
    try:
        doc, sample, shuffle = (np.load(n, mmap_mode="r", allow_pickle=False) for n in names)
    except (OSError, ValueError):
        return None
    fits = (doc.ndim == 1 and doc.size and doc.size % documents.size == 0
            and sample.ndim == 2 and sample.shape[1] == 2 and sample.shape[0] >= 2
            and shuffle.ndim == 1 and shuffle.size == sample.shape[0] - 1
            and doc.dtype.kind in "iu" and sample.dtype.kind in "iu"
            and shuffle.dtype.kind in "iu" and 0 <= int(sample[:, 0].min())
            and int(sample[:, 0].max()) < doc.size and int(shuffle.max()) < shuffle.size
            and np.isin(doc[:min(doc.size, 4096)], documents).all())
    return Mappings(np.asarray(doc), np.asarray(sample), np.asarray(shuffle)) if fits \
        else None


def _save(names: tuple[str, str, str], maps: Mappings) -> None:
    """Write the cache atomically; a folder that cannot be written is left alone (the
    mappings are computed again next time)."""
    try:
        os.makedirs(os.path.dirname(names[0]) or ".", exist_ok=True)
        for name, arr in zip(names, (maps.doc_idx, maps.sample_idx, maps.shuffle_idx),
                             strict=True):
            buffer = io.BytesIO()
            np.save(buffer, arr, allow_pickle=False)
            with atomic_file(name) as out:
                out.write(buffer.getvalue())
    except OSError:
        return


@dataclass(frozen=True)
class GPTSamples:
    """The samples of one split of one indexed dataset."""

    data: IndexedDataset
    maps: Mappings
    seq_length: int
    extra: int

    def __len__(self) -> int:
        return int(self.maps.sample_idx.shape[0]) - 1

    def tokens(self, indices: np.ndarray) -> np.ndarray:
        """Samples `indices` (in shuffled order, as NeMo's `__getitem__`) as int64
        [len(indices), S + a]; a short last sample is padded with -1."""
        m = self.maps
        width = self.seq_length + self.extra
        doc_sizes = self.data.sizes[m.doc_idx].astype(np.int64)
        cum = np.zeros(m.doc_idx.size + 1, np.int64)
        np.cumsum(doc_sizes, out=cum[1:])
        s = np.asarray(m.shuffle_idx[np.asarray(indices, np.int64)], np.int64)
        first = cum[m.sample_idx[s, 0].astype(np.int64)] + m.sample_idx[s, 1]
        end = cum[m.sample_idx[s + 1, 0].astype(np.int64)] + m.sample_idx[s + 1, 1] + \
            self.extra
        q = first[:, None] + np.arange(width, dtype=np.int64)[None, :]
        valid = q < end[:, None]
        q = np.where(valid, q, first[:, None])
        doc = np.searchsorted(cum, q, side="right") - 1
        doc = np.minimum(doc, m.doc_idx.size - 1)
        flat = self.data.starts[m.doc_idx[doc]] + (q - cum[doc])
        out = np.asarray(self.data.tokens[flat], np.int64)
        out[~valid] = -1
        return out


def build_samples(data: IndexedDataset, documents: np.ndarray, split: str, num_samples: int,
                  seq_length: int, seed: int, index_mapping_dir: str | None,
                  drop_last: bool = True, extra: int = 1, write_cache: bool = True
                  ) -> GPTSamples:
    """The samples of `documents` of `data` (cached mappings reused, new ones written
    when `write_cache`)."""
    names = cache_names(data.prefix, split, num_samples, seq_length, seed, index_mapping_dir)
    maps = _load_cached(names, documents)
    if maps is None:
        maps = build_mappings(documents, data.sizes, num_samples, seq_length, seed,
                              drop_last, extra)
        if write_cache:
            _save(names, maps)
    return GPTSamples(data, maps, seq_length, extra)
