"""The pieces a user's job brings: tokenizer vocabularies (GPT-2 files, a Hugging Face folder,
a SentencePiece model) and Megatron's padding, `save_to_disk` rows, Hydra's overrides and
the report of every unknown key at once."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.hf_dataset import HFRows
from nxcc.driver.train.overrides import apply_overrides
from nxcc.driver.train.tokenizer import (
    TokenizerConfig,
    padded_vocab_size,
    read_vocabulary,
)
from tests.driver.train.nxd_fixtures import gpt2_vocabulary, hf_tokenizer, save_to_disk
from tests.driver.train.train_yaml import GPT, variant


def test_megatron_pads_the_vocabulary() -> None:
    assert padded_vocab_size(50257, 128, 1) == 50304  # GPT-2's, as Megatron pads it
    assert padded_vocab_size(50257, 8, 8) == 50304
    assert padded_vocab_size(250, 8, 2) == 256 and padded_vocab_size(256, 8, 2) == 256


def test_gpt2_files_and_the_padded_model(tmp_path: Path) -> None:
    vocab, merges = gpt2_vocabulary(tmp_path, 300)
    v = read_vocabulary(TokenizerConfig("megatron", "GPT2BPETokenizer", None, str(vocab),
                                        str(merges)))
    assert (v.size, v.eod_id) == (300, 299)
    c = load_config(str(GPT), ("model.vocab_size=null", f"data.tokenizer.vocab_file={vocab}",
                               f"data.tokenizer.merge_file={merges}",
                               "model.make_vocab_size_divisible_by=64"))
    assert c.model is not None and c.model.vocab_size == 384  # 300 up to 64 x TP 2


def test_hf_folder_and_tokenizer_json(tmp_path: Path) -> None:
    folder = hf_tokenizer(tmp_path / "tok", 120)
    (folder / "added_tokens.json").write_text(json.dumps({"<pad>": 130}))
    v = read_vocabulary(TokenizerConfig("huggingface", str(folder), None, None, None))
    assert (v.size, v.eod_id) == (131, 119)
    v = read_vocabulary(TokenizerConfig(None, str(folder / "tokenizer.json"), None, None, None))
    assert v.size == 131
    with pytest.raises(TrainConfigError, match="downloads nothing"):
        read_vocabulary(TokenizerConfig("huggingface", "meta-llama/Meta-Llama-3-8B", None,
                                        None, None))


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def test_sentencepiece_model_size_and_eos(tmp_path: Path) -> None:
    """ModelProto: pieces are field 1, trainer_spec field 2 with eos_id field 42."""
    piece = b"\x0a\x01a" + b"\x15" + struct.pack("<f", 0.5)  # piece "a", score 0.5
    pieces = b"".join(b"\x0a" + _varint(len(piece)) + piece for _ in range(37))
    spec = _varint(42 << 3) + _varint(5)
    path = tmp_path / "tokenizer.model"
    path.write_bytes(pieces + b"\x12" + _varint(len(spec)) + spec)
    v = read_vocabulary(TokenizerConfig("sentencepiece", None, str(path), None, None))
    assert (v.size, v.eod_id) == (37, 5)
    path.write_bytes(b"\x0a\xff\xff")
    with pytest.raises(TrainConfigError, match="not a SentencePiece model"):
        read_vocabulary(TokenizerConfig("sentencepiece", None, str(path), None, None))


def test_save_to_disk_rows_shift_and_mask(tmp_path: Path) -> None:
    ids = np.arange(5 * 6).reshape(5, 6) % 50
    labels = ids.copy()
    labels[1, 2] = -100
    folder = save_to_disk(tmp_path / "ds", ids, labels, rows_per_file=2)
    rows = HFRows(str(folder), 6, "data.train_dir")
    assert len(rows) == 5 and len(rows.ids) == 3  # three files of up to two rows
    inputs, target = rows.batch(np.array([1, 4]))
    np.testing.assert_array_equal(inputs, ids[[1, 4]])
    np.testing.assert_array_equal(target[:, :-1], labels[[1, 4]][:, 1:])
    assert (target[:, -1] == -100).all() and target[0, 1] == -100
    with pytest.raises(TrainConfigError, match="every row must hold seq_length 8"):
        HFRows(str(folder), 8, "data.train_dir")


def test_hydra_overrides() -> None:
    tree = {"a": {"b": 1, "c": None}, "d": [1, 2]}
    apply_overrides(tree, ("a.b=2", "+a.e=[0.5,x]", "++a.f=3", "++a.b=4", "~d", "~a.c=null"))
    assert tree == {"a": {"b": 4, "e": [0.5, "x"], "f": 3}}
    for bad, fragment in (("a.z=1", "not a key of NxD Training's configuration"),
                          ("trainer.max_steps=1", r"add it with \+trainer\.max_steps"),
                          ("+a.b=1", "already has"), ("~q", "cannot delete"),
                          ("~a.b=9", "its value is 4"), ("a.b", "no value"),
                          ("a..b=1", "an override is")):
        with pytest.raises(TrainConfigError, match=fragment):
            apply_overrides(tree, (bad,))


def test_every_unknown_key_in_one_report(tmp_path: Path) -> None:
    path = variant(tmp_path, base=GPT, trainer__max_step=3, model__hiden_size=8,
                   data__zzz_qqq=1)
    with pytest.raises(TrainConfigError) as err:
        load_config(str(path))
    text = str(err.value)
    assert "3 keys are not keys of NxD Training's configuration" in text
    for fragment in ("trainer.max_step (did you mean 'trainer.max_steps'?)",
                     "model.hiden_size (did you mean 'model.hidden_size'?)",
                     "data.zzz_qqq (no similar key)"):
        assert fragment in text
