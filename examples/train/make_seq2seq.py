"""Write the toy translation task the T5 example trains on (`data/t5/*.npy`).

Each example is a source of 8 random token ids (2..63) and its target, the source reversed:
`encoder_tokens` the source, `decoder_tokens` the target shifted right behind the
begin-of-sequence id 1, `labels` the target (int32, one .npy per input of the model).
`data/t5_val/` holds other examples. Deterministic (seeded); run from anywhere:

    python examples/train/make_seq2seq.py
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, LENGTH, BOS = 64, 8, 1


def examples(count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    source = rng.integers(2, VOCAB, (count, LENGTH)).astype(np.int32)
    target = source[:, ::-1].copy()
    shifted = np.concatenate([np.full((count, 1), BOS, np.int32), target[:, :-1]], axis=1)
    return {"encoder_tokens": source, "decoder_tokens": shifted, "labels": target}


def write(folder: str, count: int, seed: int) -> None:
    os.makedirs(folder, exist_ok=True)
    for name, arr in examples(count, seed).items():
        np.save(os.path.join(folder, f"{name}.npy"), arr)
    print(f"{folder}: {count} examples")


def main() -> None:
    write(os.path.join(HERE, "data", "t5"), 64, 1)
    write(os.path.join(HERE, "data", "t5_val"), 16, 2)


if __name__ == "__main__":
    main()
