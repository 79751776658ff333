"""What a hostile or careless writer puts in a `.npy` or `.npz`: shared by every kind whose
input is one (run --inputs, state files, training data, checkpoint shards).

`npy_hazard` rewrites one array file: its header (versions 1-3, big-endian or Fortran
order, object / structured / string / zero-size dtypes, shapes of 2^62 or 10^30 elements,
a header length far past the data, a header that is no dict), or its data (cut short,
trailing bytes). `zip_hazard` rewrites the archive around the members: a member marked
encrypted, compressed with bzip2 or LZMA (a kilobyte that expands to 100 MB), a duplicated
member, bytes after the end record, a central directory whose sizes, offsets or CRC lie.
"""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
from hypothesis import strategies as st

MAGIC = b"\x93NUMPY"
BOMB_BYTES = 100_000_000
HEADER_DICTS = (
    "{'descr': '>f4', 'fortran_order': False, 'shape': (4, 16), }",
    "{'descr': '<f4', 'fortran_order': True, 'shape': (16, 4), }",
    "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",
    "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }",
    "{'descr': ('<f4', (1073741824,)), 'fortran_order': False, 'shape': (1,), }",
    "{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }",
    "{'descr': 'V0', 'fortran_order': False, 'shape': (4,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }",
    "{'descr': '<i4', 'fortran_order': False, 'shape': (1000000000000000000000000000000,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2147483647, 2147483647), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), 'extra': 1, }",
    "{'descr': '<f4', 'shape': (4, 16), }",
    "[1, 2, 3]",
    "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(" * 300 + ")" * 300 + ", }",
    "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }",
)


def _header(text: str, version: int) -> bytes:
    body = text.encode("latin1")
    body += b" " * (-(len(body) + 12) % 64) + b"\n"
    size = struct.pack("<H" if version == 1 else "<I", len(body))
    return MAGIC + bytes([version, 0]) + size + body


def npy_of(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def split_npy(npy: bytes) -> tuple[bytes, bytes]:
    """(header, data) of `.npy` bytes (the whole as header when it cannot be split)."""
    if npy[:6] != MAGIC or len(npy) < 10:
        return npy, b""
    length = struct.unpack("<H", npy[8:10])[0] if npy[6] == 1 else \
        struct.unpack("<I", npy[8:12])[0] if len(npy) >= 12 else 0
    end = (10 if npy[6] == 1 else 12) + length
    return npy[:end], npy[end:]


def npy_hazard(npy: bytes, data: st.DataObject) -> bytes:
    """One hostile rewrite of the `.npy` bytes `npy` (see the module docstring)."""
    head, body = split_npy(npy)
    what = data.draw(st.sampled_from(("header", "header", "version", "cut", "trailing",
                                      "length", "swap")), label="npy hazard")
    if what == "header":
        version = data.draw(st.sampled_from((1, 2, 3)))
        return _header(data.draw(st.sampled_from(HEADER_DICTS)), version) + body
    if what == "version":
        text = head[10:].decode("latin1", "replace") if head[6:7] == b"\x01" else \
            head[12:].decode("latin1", "replace")
        return _header(text.strip(), data.draw(st.sampled_from((2, 3)))) + body
    if what == "cut":
        return head + body[: data.draw(st.integers(0, max(len(body) - 1, 0)))]
    if what == "trailing":
        return npy + data.draw(st.sampled_from((b"\x00", b"\x00" * 4096, b"garbage")))
    if what == "length":  # a header length that runs past the data
        return MAGIC + b"\x02\x00" + struct.pack("<I", data.draw(st.sampled_from(
            (0xFFFFFFFF, 1 << 20, 10001)))) + head[12:] + body
    try:  # big-endian: the same values, the other byte order (valid, converted on reading)
        arr = np.load(io.BytesIO(npy), allow_pickle=False)
        return npy_of(arr.astype(arr.dtype.newbyteorder(">")))
    except Exception:  # noqa: BLE001 - not an array numpy reads: a header hazard instead
        return _header(HEADER_DICTS[0], 1) + body


def _members(raw: bytes) -> list[tuple[zipfile.ZipInfo, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            return [(i, z.read(i)) for i in z.infolist()]
    except Exception:  # noqa: BLE001 - an archive zipfile cannot read
        return None


def _write(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, body in members:
            z.writestr(name, body)
    return buf.getvalue()


def _central(raw: bytes) -> list[int]:
    """Offsets of the central directory entries in `raw`."""
    out, at = [], raw.find(b"PK\x01\x02")
    while at >= 0:
        out.append(at)
        at = raw.find(b"PK\x01\x02", at + 4)
    return out


def zip_hazard(raw: bytes, data: st.DataObject) -> bytes:
    """One hostile rewrite of the zip archive `raw` (see the module docstring)."""
    members = _members(raw)
    if not members:
        return raw + b"\x00" * 8
    what = data.draw(st.sampled_from(("encrypt", "bzip2", "lzma", "method", "duplicate",
                                      "trailing", "bomb", "size", "offset", "crc")),
                     label="zip hazard")
    named = [(i.filename, body) for i, body in members]
    k = data.draw(st.integers(0, len(named) - 1))
    if what in ("bzip2", "lzma"):
        return _write(named, zipfile.ZIP_BZIP2 if what == "bzip2" else zipfile.ZIP_LZMA)
    if what == "duplicate":
        return _write([*named, (named[k][0], named[data.draw(st.integers(0, len(named) - 1))][1])])
    if what == "trailing":
        return raw + data.draw(st.sampled_from((b"\x00", b"PK\x05\x06", b"x" * 1000)))
    if what == "bomb":  # member k as 113 bytes of bzip2 that expand to 100 MB
        return _bzip2_bomb(named[k][0])
    buf = bytearray(raw)
    entries = _central(raw)
    if not entries:
        return raw
    at = entries[k % len(entries)]
    if what == "encrypt":
        buf[at + 8] |= 1
    elif what == "method":
        struct.pack_into("<H", buf, at + 10, data.draw(st.sampled_from((12, 14, 99, 1))))
    elif what == "size":  # uncompressed (and compressed) size claim
        field = data.draw(st.sampled_from((20, 24)))
        struct.pack_into("<I", buf, at + field, data.draw(st.sampled_from(
            (0, 1, 0xFFFFFFFF, 1 << 30))))
    elif what == "offset":
        struct.pack_into("<I", buf, at + 42, data.draw(st.sampled_from((0, 1, 30, 0xFFFFFFFE))))
    else:
        struct.pack_into("<I", buf, at + 16, data.draw(st.integers(0, 0xFFFFFFFF)))
    return bytes(buf)


#: bzip2 of BOMB_BYTES zeros (`bz2.compress(bytes(10**8))`, 113 bytes) and their CRC-32,
#: kept as constants: compressing 100 MB takes seconds.
ZEROS_BZIP2 = bytes.fromhex(
    "425a68393141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a80973141592653590e"
    "09e2df015f8e4000c0000008200030804d4642a025a90a8097314159265359c4600a55003ed14002c0000"
    "0400008200030cc09aa69a548836a2a441e2ee48a70a121c0a8892e")
ZEROS_CRC = 0x2142554D


def _bzip2_bomb(name: str) -> bytes:
    """A zip of one bzip2 member `name` that expands to BOMB_BYTES zeros, written by hand
    (zipfile would compress the 100 MB each time)."""
    blob, crc = ZEROS_BZIP2, ZEROS_CRC
    encoded = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 46, 0, zipfile.ZIP_BZIP2, 0, 0, crc,
                        len(blob), BOMB_BYTES, len(encoded), 0) + encoded
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 46, 46, 0, zipfile.ZIP_BZIP2, 0, 0,
                          crc, len(blob), BOMB_BYTES, len(encoded), 0, 0, 0, 0, 0, 0) + encoded
    start = len(local) + len(blob)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central), start, 0)
    return local + blob + central + end
