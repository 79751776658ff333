"""A writer of Megatron indexed datasets for the tests, from the format's description
(`driver/train/megatron_index.py`'s docstring): `PREFIX.bin` the tokens back to back,
`PREFIX.idx` the header, sizes, byte pointers and document index."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3,
         np.dtype(np.int32): 4, np.dtype(np.int64): 5, np.dtype(np.uint16): 8}


def write_dataset(prefix: Path, documents: Sequence[Sequence[int]],
                  dtype: type = np.uint16) -> Path:
    """One sequence per document (as preprocess_data.py writes without sentence
    splitting); returns the prefix."""
    dt = np.dtype(dtype)
    arrays = [np.asarray(d, dt) for d in documents]
    sizes = np.array([a.size for a in arrays], np.int32)
    pointers = np.zeros(len(arrays), np.int64)
    if len(arrays) > 1:
        pointers[1:] = np.cumsum(sizes[:-1].astype(np.int64)) * dt.itemsize
    doc_idx = np.arange(len(arrays) + 1, dtype=np.int64)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.bin").write_bytes(b"".join(a.tobytes() for a in arrays))
    header = struct.pack("<9sQBQQ", b"MMIDIDX\x00\x00", 1, CODES[dt], len(arrays),
                         doc_idx.size)
    Path(f"{prefix}.idx").write_bytes(header + sizes.tobytes() + pointers.tobytes()
                                      + doc_idx.tobytes())
    return prefix


def random_documents(seed: int, count: int, vocab: int, eod: int, lengths=(3, 40)
                     ) -> list[list[int]]:
    """`count` documents of random ids below `vocab` (never `eod`), each ending in `eod`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        body = rng.integers(0, vocab, int(rng.integers(*lengths)))
        body[body == eod] = (eod + 1) % vocab
        out.append([*body.tolist(), eod])
    return out
