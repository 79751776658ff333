"""A Megatron indexed dataset (`PREFIX.idx` + `PREFIX.bin`), read memory-mapped.

This is the pair Megatron-LM's and NeMo's `preprocess_data.py` write (`MMapIndexedDataset`).
The `.bin` file is the token ids of every sequence back to back, in one integer dtype; the
`.idx` file, little-endian:

    offset 0   9 bytes   magic b"MMIDIDX\\x00\\x00"
           9   u64       version, 1
          17   u8        dtype code: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16
                         (6 and 7 are float types, which are no token ids)
          18   u64       N, the number of sequences
          26   u64       M, the number of entries of the document index
          34   int32[N]  sizes: each sequence's number of tokens
               int64[N]  pointers: each sequence's byte offset in the .bin file
               int64[M]  document index: the first sequence of each document, then N

Every number is checked against the files before anything is used (sizes against the
pointers, the pointers against the .bin file's length, the document index rising from 0 to
N), so a damaged or foreign file is refused in one line naming it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from nxcc.driver.train.errors import TrainConfigError

MAGIC = b"MMIDIDX\x00\x00"
HEADER = struct.Struct("<9sQBQQ")
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}
FLOAT_CODES = (6, 7)


@dataclass(frozen=True)
class IndexedDataset:
    """One indexed dataset: `sizes` int32 [N], `starts` int64 [N] (each sequence's first
    token in `tokens`), `doc_idx` int64 [M], and `tokens` the .bin file as a memory-mapped
    1-D array of its dtype."""

    prefix: str
    sizes: np.ndarray
    starts: np.ndarray
    doc_idx: np.ndarray
    tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.sizes.shape[0])


def _refuse(key: str, path: str, what: str) -> TrainConfigError:
    return TrainConfigError(key, f"{path} is not a Megatron indexed dataset: {what}")


def _read_header(path: str, key: str) -> tuple[np.dtype, int, int]:
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
    except OSError as exc:
        raise TrainConfigError(key, f"cannot read {path} ({exc.strerror})") from None
    if len(head) < HEADER.size:
        raise _refuse(key, path, f"{len(head)} bytes, shorter than the header")
    magic, version, code, count, docs = HEADER.unpack(head)
    if magic != MAGIC:
        raise _refuse(key, path, "wrong magic (not MMIDIDX)")
    if version != 1:
        raise _refuse(key, path, f"index version {version} (nxcc reads version 1)")
    if code in FLOAT_CODES:
        raise _refuse(key, path, f"dtype code {code} is a float type, not token ids")
    if code not in DTYPES:
        raise _refuse(key, path, f"unknown dtype code {code}")
    return np.dtype(DTYPES[code]), count, docs


def read_indexed_dataset(prefix: str, key: str = "data.data_prefix") -> IndexedDataset:
    """The dataset at `prefix` (`prefix.idx`, `prefix.bin`); TrainConfigError naming the
    file for anything that does not fit the format."""
    idx, binary = f"{prefix}.idx", f"{prefix}.bin"
    for path in (idx, binary):
        if not os.path.isfile(path):
            raise TrainConfigError(key, f"no such file: {path} (a Megatron dataset prefix "
                                        "names PREFIX.idx and PREFIX.bin)")
    dtype, count, docs = _read_header(idx, key)
    need = HEADER.size + 4 * count + 8 * count + 8 * docs
    have = os.path.getsize(idx)
    if need != have:
        raise _refuse(key, idx, f"{have} bytes where {count} sequences and {docs} document "
                                f"index entries need {need}")
    index = np.memmap(idx, dtype=np.uint8, mode="r")
    sizes = np.frombuffer(index, np.int32, count, HEADER.size)
    pointers = np.frombuffer(index, np.int64, count, HEADER.size + 4 * count)
    doc_idx = np.frombuffer(index, np.int64, docs, HEADER.size + 12 * count)
    _check(sizes, pointers, doc_idx, dtype, os.path.getsize(binary), idx, key)
    tokens = np.memmap(binary, dtype=dtype, mode="r") if os.path.getsize(binary) else \
        np.zeros(0, dtype)
    return IndexedDataset(prefix, sizes, pointers // dtype.itemsize, doc_idx, tokens)


def _check(sizes: np.ndarray, pointers: np.ndarray, doc_idx: np.ndarray, dtype: np.dtype,
           bin_bytes: int, path: str, key: str) -> None:
    if sizes.size and int(sizes.min()) < 0:
        raise _refuse(key, path, "a negative sequence size")
    item = dtype.itemsize
    if bin_bytes % item:
        raise _refuse(key, path, f"the .bin file's {bin_bytes} bytes are not whole "
                                 f"{dtype.name} token ids")
    if sizes.size:
        if int(pointers.min()) < 0 or np.any(pointers % item):
            raise _refuse(key, path, "a pointer that is negative or not on a token boundary")
        ends = pointers + sizes.astype(np.int64) * item
        if int(ends.max()) > bin_bytes:
            raise _refuse(key, path, f"a sequence runs past the end of the .bin file "
                                     f"({int(ends.max())} > {bin_bytes} bytes)")
    if doc_idx.size < 1 or int(doc_idx[0]) != 0 or int(doc_idx[-1]) != sizes.size or \
            np.any(np.diff(doc_idx) < 0):
        raise _refuse(key, path, f"the document index does not rise from 0 to the "
                                 f"{sizes.size} sequences")
