"""The files an NxD user's job has, written by the tests' own code from the formats'
descriptions: a GPT-2 BPE vocabulary (`vocab.json` + `merges.txt`), a Hugging Face tokenizer
folder (`tokenizer.json`, `tokenizer_config.json`), a `save_to_disk` dataset (Arrow IPC
stream + `state.json`), Megatron indexed datasets (`tests/driver/train/megatron_writer.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.driver.train.megatron_writer import random_documents, write_dataset

GPT2_EOD = "<|endoftext|>"


def gpt2_vocabulary(folder: Path, size: int) -> tuple[Path, Path]:
    """vocab.json of `size` tokens (the last `<|endoftext|>`) and a merges.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {f"t{i}": i for i in range(size - 1)} | {GPT2_EOD: size - 1}
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\nt 1\n", encoding="utf-8")
    return folder / "vocab.json", folder / "merges.txt"


def hf_tokenizer(folder: Path, size: int, eos: str = "<|end_of_text|>") -> Path:
    """A tokenizer folder as save_pretrained writes one: tokenizer.json (a BPE model of
    `size - 1` tokens and `eos` as an added token) and tokenizer_config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {f"b{i}": i for i in range(size - 1)}
    tokenizer = {"version": "1.0", "added_tokens": [
        {"id": size - 1, "content": eos, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}],
        "model": {"type": "BPE", "vocab": vocab, "merges": []}}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": eos, "tokenizer_class": "PreTrainedTokenizerFast"}), encoding="utf-8")
    return folder


def save_to_disk(folder: Path, input_ids: np.ndarray, labels: np.ndarray | None = None,
                 rows_per_file: int | None = None) -> Path:
    """A dataset folder as `datasets.save_to_disk` writes it: Arrow IPC streams of rows
    (`input_ids`, `attention_mask` of ones, `labels`), `state.json` listing them."""
    import pyarrow as pa

    folder.mkdir(parents=True, exist_ok=True)
    rows = input_ids.shape[0]
    per = rows_per_file or rows
    files = []
    for k, lo in enumerate(range(0, rows, per)):
        part = slice(lo, min(lo + per, rows))
        columns = {"input_ids": input_ids[part],
                   "attention_mask": np.ones_like(input_ids[part]),
                   "labels": (labels if labels is not None else input_ids)[part]}
        table = pa.table({name: pa.array(list(values.astype(np.int32)),
                                         type=pa.list_(pa.int32()))
                          for name, values in columns.items()})
        name = f"data-{k:05d}-of-{-(-rows // per):05d}.arrow"
        with pa.OSFile(str(folder / name), "wb") as sink, \
                pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=3)
        files.append({"filename": name})
    (folder / "state.json").write_text(json.dumps(
        {"_data_files": files, "_fingerprint": "nxcc-test", "_format_columns": None,
         "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False,
         "_split": None}), encoding="utf-8")
    (folder / "dataset_info.json").write_text(json.dumps({"features": {
        "input_ids": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "Sequence"}}}),
        encoding="utf-8")
    return folder


def megatron_pair(folder: Path, vocab: int, eod: int) -> tuple[Path, Path]:
    """Two Megatron datasets of different documents (ids below `vocab`)."""
    a = write_dataset(folder / "books_text_document", random_documents(11, 120, vocab, eod))
    b = write_dataset(folder / "web_text_document", random_documents(12, 90, vocab, eod,
                                                                      (10, 60)))
    return a, b
