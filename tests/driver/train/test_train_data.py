"""The token stream of `data.train_dir` and its batches, checked against numpy slices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.data import Batches, load_tokens, micro_batches
from nxcc.driver.train.errors import TrainConfigError
from tests.driver.train.train_yaml import DATA, EXAMPLES


def write(folder: Path, **arrays: np.ndarray) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in arrays.items():
        np.save(folder / f"{name}.npy", arr)
    return folder


def test_files_read_in_name_order_as_one_stream(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(0, 100, size=n) for n in (50, 7, 31))
    folder = write(tmp_path / "d", b_second=b.astype(np.int32), a_first=a.astype(np.uint16),
                   c_third=c)
    (folder / "notes.txt").write_text("not a token file")
    tokens = load_tokens(str(folder), vocab_size=100)
    assert tokens.dtype == np.int64
    np.testing.assert_array_equal(tokens, np.concatenate([a, b, c]))


def test_batches_are_numpy_slices() -> None:
    tokens = np.arange(1000, dtype=np.int64) * 3 % 251
    seq, g = 10, 6
    batches = Batches(tokens, seq, g)
    assert batches.num_sequences == 99 and batches.batches_per_epoch == 16
    for step in (0, 1, 15, 16, 37):
        x, y = batches.global_batch(step)
        assert x.shape == y.shape == (g, seq)
        b = step % 16
        for i in range(g):
            s = (b * g + i) * seq
            np.testing.assert_array_equal(x[i], tokens[s:s + seq])
            np.testing.assert_array_equal(y[i], tokens[s + 1:s + seq + 1])
    assert batches.position(37) == {"step": 37, "epoch": 2, "batch": 5}


def test_micro_batches_global_then_dp_then_micro() -> None:
    x = np.arange(8 * 4).reshape(8, 4)
    y = x + 100
    shards = [micro_batches(x, y, d, 2, 2) for d in range(2)]
    assert [len(s) for s in shards] == [2, 2]
    np.testing.assert_array_equal(shards[0][0][0], x[0:2])
    np.testing.assert_array_equal(shards[0][1][0], x[2:4])
    np.testing.assert_array_equal(shards[1][0][0], x[4:6])
    np.testing.assert_array_equal(shards[1][1][1], y[6:8])
    # every layout covers the same rows in the same order
    flat = np.concatenate([mb[0] for d in range(4) for mb in micro_batches(x, y, d, 4, 1)])
    np.testing.assert_array_equal(flat, x)
    with pytest.raises(ValueError, match="does not split"):
        micro_batches(x, y, 0, 3, 1)


def test_shipped_corpus() -> None:
    tokens = load_tokens(str(DATA), vocab_size=256)
    text = (EXAMPLES / "corpus.txt").read_bytes()
    np.testing.assert_array_equal(tokens, np.frombuffer(text, dtype=np.uint8))
    assert Batches(tokens, 32, 8).batches_per_epoch >= 20  # 20 steps without repeating


@pytest.mark.parametrize(("setup", "fragments"), [
    ("missing", ("data.train_dir:", "does not exist")),
    ("file", ("is not a folder",)),
    ("empty", ("holds no .npy files",)),
    ("float", ("holds float32, not integer token ids",)),
    ("2d", ("has shape (4, 5), not a 1-D array",)),
    ("vocab", ("holds token id 300", "model.vocab_size 256")),
    ("negative", ("holds token id -1",)),
    ("garbage", ("is not a readable .npy file",)),
    ("pickle", ("not a readable .npy file",)),
])
def test_bad_data_is_one_line(tmp_path: Path, setup: str, fragments: tuple[str, ...]) -> None:
    folder = tmp_path / "d"
    if setup == "file":
        folder.write_text("x")
    elif setup != "missing":
        folder.mkdir()
    arrays = {"float": np.zeros(5, np.float32), "2d": np.zeros((4, 5), np.int32),
              "vocab": np.array([1, 300, 2]), "negative": np.array([3, -1])}
    if setup in arrays:
        np.save(folder / "t.npy", arrays[setup])
    if setup == "garbage":
        (folder / "t.npy").write_bytes(b"\x93NUMPY garbage")
    if setup == "pickle":
        np.save(folder / "t.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(TrainConfigError) as info:
        load_tokens(str(folder), vocab_size=256)
    text = str(info.value)
    assert text.startswith("[NCC_ETRN001] data.train_dir: ") and "\n" not in text
    for f in fragments:
        assert f in text, text


def test_corpus_shorter_than_a_global_batch_says_how_many_tokens() -> None:
    with pytest.raises(TrainConfigError, match=r"holds 100 tokens; one global batch of 8 "
                                               r"sequences of seq_length 32 .* needs 257"):
        Batches(np.zeros(100, np.int64), 32, 8)
    Batches(np.zeros(257, np.int64), 32, 8)  # exactly enough
