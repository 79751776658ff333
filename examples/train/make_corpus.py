"""Tokenize `corpus.txt` into the token-id files `neuronx-cc train` reads (`data/*.npy`).

The tokenizer is byte-level: each byte of the UTF-8 text is one token id (0..255), so the
example configs use `vocab_size: 256` and nothing needs to be downloaded. The stream is
written as two files, split at a paragraph break, to show that `data.train_dir` is read
as one stream in file-name order. Run from anywhere:

    python examples/train/make_corpus.py
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_SIZE = 256


def tokenize(text: str) -> np.ndarray:
    """Byte-level token ids (uint16) of `text`."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint16)


def main() -> None:
    with open(os.path.join(HERE, "corpus.txt"), encoding="utf-8") as f:
        text = f.read()
    middle = text.find("\n\n", len(text) // 2)
    parts = [text[:middle], text[middle:]] if middle > 0 else [text]
    out_dir = os.path.join(HERE, "data")
    os.makedirs(out_dir, exist_ok=True)
    for i, part in enumerate(parts):
        ids = tokenize(part)
        path = os.path.join(out_dir, f"corpus_{i:02d}.npy")
        np.save(path, ids)
        print(f"{path}: {ids.size} tokens")


if __name__ == "__main__":
    main()
