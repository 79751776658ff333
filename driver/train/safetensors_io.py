"""Reading and writing `.safetensors` files with numpy (no torch, no safetensors package).

The format (Hugging Face's): an unsigned little-endian 64-bit header length N, N bytes of
UTF-8 JSON mapping each tensor name to `{"dtype", "shape", "data_offsets": [begin, end]}`
(offsets into the bytes after the header; an optional `__metadata__` of strings), then the
tensors' bytes, little-endian, C order, back to back. A model too large for one file is
cut into several with `model.safetensors.index.json` (`{"metadata": {"total_size": ...},
"weight_map": {tensor name: file name}}`). bf16 tensors are read and written through
ml_dtypes (which the safetensors package's numpy API cannot do). Reading checks the header
against the file (offsets in order, inside the file, the sizes of the shapes and dtypes, no
overlap) before anything is used and maps the tensors without copying them.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Mapping

import ml_dtypes
import numpy as np

from nxcc.backend.neff.atomic import atomic_file

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
          "BF16": ml_dtypes.bfloat16, "I64": np.int64, "I32": np.int32, "I16": np.int16,
          "I8": np.int8, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32,
          "U64": np.uint64, "BOOL": np.bool_}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
MAX_HEADER = 100 << 20


class SafetensorsError(ValueError):
    """A file that is not a safetensors file (the message names the problem)."""


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """The tensors of `path`, memory-mapped (read-only)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise SafetensorsError(f"{path}: {size} bytes, shorter than a header")
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, MAX_HEADER):
            raise SafetensorsError(f"{path}: a header of {n} bytes does not fit the file")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise SafetensorsError(f"{path}: the header is not JSON") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header is not a JSON object")
    header.pop("__metadata__", None)
    data_size = size - 8 - n
    raw = np.memmap(path, np.uint8, mode="r", offset=8 + n) if data_size else \
        np.zeros(0, np.uint8)
    out: dict[str, np.ndarray] = {}
    spans = []
    for name, entry in header.items():
        dtype, shape, lo, hi = _entry(path, name, entry)
        if not 0 <= lo <= hi <= data_size:
            raise SafetensorsError(f"{path}: tensor {name!r} lies outside the file")
        if hi - lo != math.prod(shape) * dtype.itemsize:
            raise SafetensorsError(f"{path}: tensor {name!r} has {hi - lo} bytes for shape "
                                   f"{shape} of {NAMES[dtype]}")
        spans.append((lo, hi, name))
        out[name] = raw[lo:hi].view(dtype).reshape(shape)
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise SafetensorsError(f"{path}: tensors {a!r} and {b!r} overlap")
    return out


def _entry(path: str, name: str, entry: object) -> tuple[np.dtype, tuple[int, ...], int, int]:
    if not isinstance(entry, dict):
        raise SafetensorsError(f"{path}: tensor {name!r} has no dtype, shape and offsets")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPES:
        raise SafetensorsError(f"{path}: tensor {name!r} has dtype {dtype!r}, not one of "
                               f"{', '.join(DTYPES)}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise SafetensorsError(f"{path}: tensor {name!r} has shape {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(isinstance(o, int) for o in offsets):
        raise SafetensorsError(f"{path}: tensor {name!r} has data_offsets {offsets!r}")
    return np.dtype(DTYPES[dtype]), tuple(shape), offsets[0], offsets[1]


def write_safetensors(path: str, tensors: Mapping[str, np.ndarray]) -> int:
    """Write `tensors` (in name order) to `path` atomically; the bytes of tensor data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    arrays = {}
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        if arr.dtype not in NAMES:
            raise SafetensorsError(f"tensor {name!r} has dtype {arr.dtype}, which "
                                   "safetensors does not hold")
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        header[name] = {"dtype": NAMES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        arrays[name] = arr
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with atomic_file(path) as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for arr in arrays.values():
            out.write(arr.tobytes())
    return offset


def read_folder(folder: str) -> dict[str, np.ndarray]:
    """Every tensor of a model folder: `model.safetensors`, or the files its index names."""
    index = os.path.join(folder, INDEX)
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                weight_map = json.load(f).get("weight_map")
        except (OSError, ValueError, AttributeError, RecursionError) as exc:
            raise SafetensorsError(f"{index}: not a safetensors index ({exc})") from None
        if not isinstance(weight_map, dict) or not weight_map:
            raise SafetensorsError(f"{index}: no weight_map")
        out: dict[str, np.ndarray] = {}
        for file in sorted(set(weight_map.values())):
            if not isinstance(file, str) or os.path.basename(file) != file:
                raise SafetensorsError(f"{index}: names {file!r} outside the folder")
            out.update(read_safetensors(os.path.join(folder, file)))
        missing = sorted(set(weight_map) - set(out))
        if missing:
            raise SafetensorsError(f"{index}: {missing[0]!r} is not in the file it names")
        return out
    single = os.path.join(folder, SINGLE)
    if not os.path.isfile(single):
        raise SafetensorsError(f"{folder} holds neither {SINGLE} nor {INDEX}")
    return read_safetensors(single)


def write_folder(folder: str, tensors: Mapping[str, np.ndarray], max_shard_bytes: int
                 ) -> list[str]:
    """`tensors` as `model.safetensors`, or as shards of at most `max_shard_bytes` (a
    tensor larger than that alone in its shard) with the index; the files written."""
    os.makedirs(folder, exist_ok=True)
    shards: list[dict[str, np.ndarray]] = [{}]
    used = 0
    for name in sorted(tensors):
        nbytes = tensors[name].nbytes
        if shards[-1] and used + nbytes > max_shard_bytes:
            shards.append({})
            used = 0
        shards[-1][name] = tensors[name]
        used += nbytes
    if len(shards) == 1:
        write_safetensors(os.path.join(folder, SINGLE), shards[0])
        return [SINGLE]
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    total = sum(write_safetensors(os.path.join(folder, n), s) for n, s in
                zip(names, shards, strict=True))
    weight_map = {t: n for n, s in zip(names, shards, strict=True) for t in s}
    text = json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2)
    with atomic_file(os.path.join(folder, INDEX)) as out:
        out.write(text.encode("utf-8"))
    return [*names, INDEX]
