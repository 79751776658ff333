"""Megatron indexed datasets (`data.data_prefix`) written by the tests' own writer from the
format's description: samples of seq_length + 1 tokens across documents, in the order a
seeded shuffle gives, splits, blending weights, the index-mapping cache, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.batches import MegatronRows
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.megatron_data import (
    Blend,
    MegatronSpec,
    Request,
    blend_indices,
    megatron_samples,
    shares,
    split_boundaries,
)
from nxcc.driver.train.megatron_index import read_indexed_dataset
from nxcc.driver.train.megatron_samples import build_mappings, build_samples, cache_names
from tests.driver.train.megatron_writer import random_documents, write_dataset

EOD = 7


def _loop_sample_idx(sizes, doc_idx, s, total, extra=1):  # noqa: ANN001, ANN202
    """Where each sample starts, walking the documents one by one (the format's description
    of Megatron's helper), as an oracle for the vectorised mapping."""
    n = (total - extra) // s
    out = [(0, 0)]
    d, off = 0, 0
    for _ in range(n):
        rem = s + extra
        while rem:
            length = sizes[doc_idx[d]] - off
            rem -= length
            if rem <= 0:
                off += rem + length - extra
                rem = 0
            else:
                d, off = d + 1, 0
        out.append((d, off))
    return np.array(out)


def test_read_back_and_samples_cross_documents(tmp_path: Path) -> None:
    docs = random_documents(0, 30, 50, EOD)
    prefix = write_dataset(tmp_path / "a_text_document", docs)
    data = read_indexed_dataset(str(prefix))
    assert len(data) == 30 and data.sizes.tolist() == [len(d) for d in docs]
    assert data.tokens.dtype == np.uint16
    s, seed = 8, 1234
    documents = np.arange(30, dtype=np.int32)
    samples = build_samples(data, documents, "train", 40, s, seed, None, write_cache=False)
    maps = samples.maps
    # the documents in a seeded order, epochs as needed
    expect = np.tile(documents, maps.doc_idx.size // 30)
    np.random.RandomState(seed).shuffle(expect)
    np.testing.assert_array_equal(maps.doc_idx, expect)
    total = int(data.sizes[maps.doc_idx].sum())
    np.testing.assert_array_equal(maps.sample_idx,
                                  _loop_sample_idx(data.sizes, maps.doc_idx, s, total))
    stream = np.concatenate([docs[i] for i in maps.doc_idx])
    got = samples.tokens(np.arange(len(samples)))
    for k, row in enumerate(got):  # sample k is window shuffle_idx[k] of the stream
        j = int(maps.shuffle_idx[k])
        np.testing.assert_array_equal(row, stream[j * s: j * s + s + 1])
    assert sorted(maps.shuffle_idx.tolist()) == list(range(len(samples)))


def test_eod_mask_and_shifted_labels(tmp_path: Path) -> None:
    docs = random_documents(1, 12, 50, EOD)
    data = read_indexed_dataset(str(write_dataset(tmp_path / "d", docs)))
    samples = build_samples(data, np.arange(12, dtype=np.int32), "train", 10, 6, 3, None,
                            write_cache=False)
    text = samples.tokens(np.arange(4))
    inputs, labels = MegatronRows(samples, 1, EOD).batch(np.arange(4))
    np.testing.assert_array_equal(inputs, text[:, :-1])
    keep = inputs != EOD
    np.testing.assert_array_equal(labels[keep], text[:, 1:][keep])
    assert (labels[~keep] == -100).all() and (~keep).any()


def test_splits_as_nemo_rounds_them() -> None:
    assert split_boundaries("980,10,10", 1000) == [0, 980, 990, 1000]
    assert split_boundaries("969,30,1", 10) == [0, 10, 10, 10]
    # round half to even (2.5 -> 2), then every boundary moved by the 1 missing
    assert split_boundaries("8/1/1", 25) == [0, 21, 23, 25]
    with pytest.raises(TrainConfigError, match="data.splits_string"):
        split_boundaries("1,2", 10)


def test_blend_follows_the_weights() -> None:
    which, index = blend_indices((0.3, 0.7), 1000)
    for j in (10, 100, 1000):
        counts = np.bincount(which[:j], minlength=2)
        assert abs(counts[0] - 0.3 * j) <= 1 and abs(counts[1] - 0.7 * j) <= 1
    for i in (0, 1):  # each dataset's samples taken in order
        np.testing.assert_array_equal(index[which == i], np.arange((which == i).sum()))
    assert shares((1.0, 3.0), 100) == [26, 76]  # NeMo's 0.5% margin, rounded up


def test_blended_data_prefix_with_splits_and_cache(tmp_path: Path) -> None:
    a = write_dataset(tmp_path / "a", random_documents(2, 40, 50, EOD))
    b = write_dataset(tmp_path / "b", [[100 + t % 20 for t in d] for d in
                                       random_documents(3, 40, 50, EOD)])
    cache = tmp_path / "maps"
    spec = MegatronSpec(Blend(((0.25, str(a)), (0.75, str(b))), True), None, "80,10,10",
                        str(cache), True, 1)
    train, val = megatron_samples(spec, Request((64, 8), 8, 1234, True))
    assert len(train) == sum(shares((0.25, 0.75), 64)) and val is not None
    tokens = train.tokens(np.arange(64))
    from_b = (tokens >= 100).all(axis=1)
    assert abs(int(from_b.sum()) - 48) <= 1  # 75% of the samples from b
    names = cache_names(str(a), "train", shares((0.25, 0.75), 64)[0], 8, 1234, str(cache))
    assert all(os.path.isfile(n) for n in names)
    stamps = [os.stat(n).st_mtime_ns for n in names]
    again, _ = megatron_samples(spec, Request((64, 8), 8, 1234, True))
    np.testing.assert_array_equal(again.tokens(np.arange(64)), tokens)
    assert [os.stat(n).st_mtime_ns for n in names] == stamps  # read from the cache


def test_dictionary_form_reads_whole_datasets(tmp_path: Path) -> None:
    a = write_dataset(tmp_path / "a", random_documents(4, 20, 50, EOD))
    v = write_dataset(tmp_path / "v", random_documents(5, 10, 50, EOD))
    spec = MegatronSpec(None, (Blend(((1.0, str(a)),), True), Blend(((1.0, str(v)),), False),
                               Blend(((1.0, str(v)),), False)), "969,30,1", None, True, 1)
    train, val = megatron_samples(spec, Request((16, 4), 8, 1, False))
    assert len(train) == 16 and val is not None and len(val) >= 4
    assert not list(tmp_path.glob("*indexmap*"))  # write_cache False: nothing written


def test_mappings_repeat_epochs_and_separate_a_short_last_one() -> None:
    sizes = np.full(10, 9, np.int32)  # 90 tokens an epoch: 11 samples of 8
    maps = build_mappings(np.arange(10, dtype=np.int32), sizes, 12, 8, 5)
    assert maps.doc_idx.size == 20  # two epochs
    # the second epoch gives 1 of its 11 samples (< 80%): shuffled apart, after the first
    first = (1 * 90 - 1) // 8
    assert sorted(maps.shuffle_idx[:first].tolist()) == list(range(first))


@pytest.mark.parametrize(("damage", "fragment"), [
    (lambda idx: b"NOTMAGIC!" + idx[9:], "wrong magic"),
    (lambda idx: idx[:17] + bytes([6]) + idx[18:], "float type"),
    (lambda idx: idx[:-8], "bytes where"),
    (lambda idx: idx[:34] + (10**6).to_bytes(4, "little") + idx[38:], "past the end"),
])
def test_damaged_index_is_one_error(tmp_path: Path, damage, fragment: str) -> None:  # noqa: ANN001
    prefix = write_dataset(tmp_path / "x", random_documents(6, 5, 50, EOD))
    idx = Path(f"{prefix}.idx")
    idx.write_bytes(damage(idx.read_bytes()))
    with pytest.raises(TrainConfigError, match=fragment):
        read_indexed_dataset(str(prefix))
