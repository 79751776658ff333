"""`data.data_prefix`: Megatron indexed datasets split, sampled and blended as NxD does.

NxD Training builds its GPT datasets with NeMo's functions (`gpt_dataset_patch.py`,
`base_dataset_utils.py`, `blendable_dataset.py`); nxcc follows them:

* the list form `[w1, prefix1, w2, prefix2, ...]` (and `[1.0, prefix]`): each dataset is cut
  into train / validation / test documents by `splits_string` (`980,10,10`: fractions of
  the document count, rounded, the last boundary moved to the count); dataset i is asked for
  ceil(n * w_i * 1.005) samples of each split (weights normalised), and the split's blend
  holds the sum of those;
* a single prefix (`prefix` or `[prefix]`): the one dataset, split the same way, unblended;
* the dictionary form `{train: ..., validation: ..., test: ...}`: each split its own list
  (`splits_string` is not used), every document of its datasets, a blend of n samples.

A blend takes sample j from the dataset whose share so far lags its weight the most
(`blend_indices`: for j >= 1, argmax over i of w_i * j - taken_i, the first on a tie; j = 0
counts as 1), and from it the next sample in order. The samples a run asks for: train
max_steps x global_batch_size; validation (max_steps // val_check_interval + 1) x
limit_val_batches x global_batch_size (one sample for a fractional limit, as NxD sets it).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from dataclasses import dataclass

import numpy as np

from nxcc.backend.neff.atomic import atomic_file
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.megatron_index import read_indexed_dataset
from nxcc.driver.train.megatron_samples import GPTSamples, build_samples

KEY = "data.data_prefix"
BLEND_MARGIN = 1.005
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class Blend:
    """Datasets of one split: (weight, prefix) pairs; `blended` when NeMo builds a blend
    (weights given), else one dataset taken as it is."""

    parts: tuple[tuple[float, str], ...]
    blended: bool


@dataclass(frozen=True)
class MegatronSpec:
    """`data.data_prefix` read: the list forms give `whole` (split by `splits_string`), the
    dictionary form `by_split` (train, valid, test)."""

    whole: Blend | None
    by_split: tuple[Blend, Blend, Blend] | None
    splits_string: str
    index_mapping_dir: str | None
    validation_drop_last: bool
    extra: int  # 1: samples of seq_length + 1 tokens; 0 with no_seqlen_plus_one_input_tokens


def split_boundaries(splits_string: str, size: int) -> list[int]:
    """NeMo's `get_train_valid_test_split_`: the document boundaries [0, a, b, size]."""
    sep = "," if "," in splits_string else "/" if "/" in splits_string else None
    try:
        parts = [float(s) for s in (splits_string.split(sep) if sep else [splits_string])]
    except ValueError:
        raise TrainConfigError("data.splits_string", f"{splits_string!r} is not three "
                               "numbers separated by commas") from None
    if len(parts) != 3 or any(p < 0 or not math.isfinite(p) for p in parts) or \
            sum(parts) <= 0:
        raise TrainConfigError("data.splits_string", f"{splits_string!r}: three "
                               "non-negative numbers with a positive sum, e.g. 980,10,10")
    total = sum(parts)
    bounds = [0]
    for p in parts:
        bounds.append(bounds[-1] + int(round(p / total * float(size))))
    diff = bounds[-1] - size
    return [bounds[0], *(b - diff for b in bounds[1:])]


def shares(weights: tuple[float, ...], count: int) -> list[int]:
    """Samples asked of each dataset of a blend of `count` (NeMo's 0.5% margin)."""
    total = sum(weights)
    return [int(math.ceil(count * (w / total) * BLEND_MARGIN)) for w in weights]


def blend_indices(weights: tuple[float, ...], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset of each blended sample uint8, its index in that dataset int64): the
    greedy of Megatron's `build_blending_indices` (see the module docstring). A sequential
    recurrence (each choice depends on the counts so far), so it is one loop over the
    samples; its result is cached with the sample mappings."""
    w = [x / sum(weights) for x in weights]
    which = np.zeros(size, np.uint8)
    index = np.zeros(size, np.int64)
    taken = [0] * len(w)
    for j in range(size):
        t = float(max(j, 1))
        best, error = 0, w[0] * t - taken[0]
        for i in range(1, len(w)):
            e = w[i] * t - taken[i]
            if e > error:
                best, error = i, e
        which[j] = best
        index[j] = taken[best]
        taken[best] += 1
    return which, index


class SampleSet:
    """Samples of one split: a dataset's, or a blend's. `tokens(indices)` gives int64
    [len(indices), seq_length + extra] (-1 pads a short last sample)."""

    def __init__(self, parts: list[GPTSamples], weights: tuple[float, ...] | None,
                 size: int, cache: str | None, write_cache: bool) -> None:
        self.parts = parts
        self.size = size if weights is not None else len(parts[0])
        self.which: np.ndarray | None = None
        self.index: np.ndarray | None = None
        if weights is not None:
            self.which, self.index = _cached_blend(weights, size, cache, write_cache)

    def __len__(self) -> int:
        return self.size

    def tokens(self, indices: np.ndarray) -> np.ndarray:
        indices = np.asarray(indices, np.int64)
        if self.which is None:
            return self.parts[0].tokens(indices)
        assert self.index is not None
        which, inner = self.which[indices], self.index[indices]
        out = np.empty((indices.size, self.parts[0].seq_length + self.parts[0].extra),
                       np.int64)
        for i, part in enumerate(self.parts):
            rows = np.nonzero(which == i)[0]
            if rows.size:
                out[rows] = part.tokens(inner[rows])
        return out


def _cached_blend(weights: tuple[float, ...], size: int, cache: str | None,
                  write_cache: bool) -> tuple[np.ndarray, np.ndarray]:
    if cache is None:
        return blend_indices(weights, size)
    key = hashlib.sha256(repr((weights, size)).encode()).hexdigest()[:16]
    path = f"{cache}_blend_{size}ns_{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            which, index = z["which"], z["index"]
        if which.shape == index.shape == (size,):
            return which, index
    except (OSError, ValueError, KeyError):
        pass
    which, index = blend_indices(weights, size)
    if write_cache:
        buffer = io.BytesIO()
        np.savez(buffer, which=which, index=index)
        try:
            with atomic_file(path) as out:
                out.write(buffer.getvalue())
        except OSError:
            pass
    return which, index


@dataclass(frozen=True)
class Request:
    """What a run asks of the data: samples per split, the sequence, the seed, whether
    caches may be written."""

    counts: tuple[int, int]  # train, valid
    seq_length: int
    seed: int
    write_cache: bool


def _dataset(spec: MegatronSpec, prefix: str, split: int, count: int, req: Request,
             whole: bool) -> GPTSamples | None:
    data = read_indexed_dataset(prefix)
    n = len(data)
    lo, hi = (0, n) if whole else split_boundaries(spec.splits_string, n)[split:split + 2]
    if hi <= lo:
        return None
    documents = np.arange(lo, hi, dtype=np.int32)
    if int(data.sizes[documents].astype(np.int64).sum()) <= spec.extra:
        raise TrainConfigError(KEY, f"{prefix}: the {SPLITS[split]} documents hold no tokens")
    drop_last = spec.validation_drop_last if split == 1 else True
    return build_samples(data, documents, SPLITS[split], count, req.seq_length, req.seed,
                         spec.index_mapping_dir, drop_last, spec.extra, req.write_cache)


def _split(spec: MegatronSpec, blend: Blend, split: int, count: int, req: Request,
           whole: bool, blend_size: int | None) -> SampleSet | None:
    weights = tuple(w for w, _ in blend.parts)
    asked = shares(weights, count) if blend.blended else [count] * len(blend.parts)
    parts = [_dataset(spec, p, split, k, req, whole) for (_, p), k in
             zip(blend.parts, asked, strict=True)]
    if all(p is None for p in parts):
        return None
    missing = [p for (_, p), d in zip(blend.parts, parts, strict=True) if d is None]
    if missing:
        raise TrainConfigError("data.splits_string", f"{spec.splits_string!r} leaves "
                               f"{missing[0]} no {SPLITS[split]} documents while the "
                               "other datasets of the blend have some")
    ready = [p for p in parts if p is not None]
    if not blend.blended:
        return SampleSet(ready, None, 0, None, req.write_cache)
    size = blend_size if blend_size is not None else sum(asked)
    cache = _blend_cache(spec, blend, SPLITS[split])
    return SampleSet(ready, weights, size, cache, req.write_cache)


def _blend_cache(spec: MegatronSpec, blend: Blend, split: str) -> str:
    first = blend.parts[0][1]
    base = os.path.join(spec.index_mapping_dir, os.path.basename(first)) \
        if spec.index_mapping_dir else first
    return f"{base}_{split}"


def megatron_samples(spec: MegatronSpec, req: Request
                     ) -> tuple[SampleSet, SampleSet | None]:
    """(train samples, validation samples or None) of `spec` for `req`."""
    out: list[SampleSet | None] = []
    for split, count in enumerate(req.counts):
        if count <= 0:
            out.append(None)
            continue
        if spec.by_split is not None:
            blend = spec.by_split[split]
            out.append(_split(spec, blend, split, count, req, True, count))
        else:
            assert spec.whole is not None
            out.append(_split(spec, spec.whole, split, count, req, False, None))
    train = out[0]
    if train is None:
        raise TrainConfigError("data.splits_string", f"{spec.splits_string!r} leaves no "
                               "training documents")
    return train, out[1]
