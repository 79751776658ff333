"""The one reader of the `.npy` / `.npz` files a user gives (`backend.userfiles`): each
hostile or careless file is one UserFileError line naming it, before numpy allocates what
a header claims; valid arrays (big-endian, Fortran order, compressed) read back exactly."""

from __future__ import annotations

import io
import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.npy import read_npy
from nxcc.backend.userfiles.npz import NpzArchive, read_npz
from nxcc.backend.userfiles.structured import load_json_file, load_yaml_text
from tests.fuzz.npz_hazards import _bzip2_bomb

X = np.arange(64, dtype=np.float32).reshape(4, 16)


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def archive(path: Path, members: list[tuple[str, bytes]],
            method: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, body in members:
            z.writestr(name, body)
    return path


def refused(path: Path | str, *fragments: str) -> str:
    with pytest.raises(UserFileError) as info:
        read_npz(str(path)) if str(path).endswith(".npz") or not str(path).endswith(".npy") \
            else read_npy(str(path))
    text = str(info.value)
    assert "\n" not in text
    for fragment in fragments:
        assert fragment in text, text
    return text


def test_valid_arrays_read_back(tmp_path: Path) -> None:
    np.savez(tmp_path / "plain.npz", x=X, y=np.array(3, np.int64))
    np.savez_compressed(tmp_path / "deflated.npz", x=X)
    np.savez(tmp_path / "forms.npz", big=X.astype(">f4"), fortran=np.asfortranarray(X))
    for name in ("plain", "deflated", "forms"):
        for key, arr in read_npz(tmp_path / f"{name}.npz").items():
            np.testing.assert_array_equal(arr, X if key != "y" else 3)
            assert arr.dtype.isnative
    np.save(tmp_path / "ids.npy", np.arange(10, dtype=">u2"))
    ids = read_npy(str(tmp_path / "ids.npy"), max_bytes=None, mmap=True)
    np.testing.assert_array_equal(ids, np.arange(10))
    assert ids.dtype == np.dtype("=u2")


def test_headers_before_data(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", x=X)
    with NpzArchive(str(tmp_path / "a.npz")) as a:
        assert a.headers["x"].shape == (4, 16) and a.headers["x"].dtype == np.float32


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/"])
def test_not_regular_files(path: str) -> None:
    refused(path, path, "not a regular file")


def test_fifo_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    refused(fifo, "is a FIFO")
    os.mkfifo(tmp_path / "ids.npy")
    refused(tmp_path / "ids.npy", "is a FIFO")


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_zip_hazards(tmp_path: Path) -> None:
    body = npy(X)
    refused(archive(tmp_path / "dup.npz", [("x.npy", body), ("x.npy", npy(X * 0))]),
            "two members named 'x.npy'")
    refused(archive(tmp_path / "bz.npz", [("x.npy", body)], zipfile.ZIP_BZIP2),
            "x.npy: is compressed with bzip2")
    refused(archive(tmp_path / "xz.npz", [("x.npy", body)], zipfile.ZIP_LZMA), "with LZMA")
    (tmp_path / "bomb.npz").write_bytes(_bzip2_bomb("x.npy"))
    assert (tmp_path / "bomb.npz").stat().st_size < 1024
    refused(tmp_path / "bomb.npz", "bzip2")
    raw = bytearray((archive(tmp_path / "e.npz", [("x.npy", body)])).read_bytes())
    raw[6] |= 1
    raw[raw.find(b"PK\x01\x02") + 8] |= 1
    (tmp_path / "enc.npz").write_bytes(bytes(raw))
    refused(tmp_path / "enc.npz", "is encrypted")
    (tmp_path / "tail.npz").write_bytes((tmp_path / "e.npz").read_bytes() + b"junk")
    refused(tmp_path / "tail.npz", "trailing data after the end of its zip")
    refused(archive(tmp_path / "txt.npz", [("notes.txt", b"hi")]), "is not a .npy array")
    refused(archive(tmp_path / "over.npz", [("x.npy", body + b"\0" * 100)]),
            "has trailing data: it holds 356")


def test_lying_central_directory(tmp_path: Path) -> None:
    raw = bytearray(archive(tmp_path / "a.npz", [("x.npy", npy(X))]).read_bytes())
    at = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, at + 24, 1 << 30)  # uncompressed size claim
    (tmp_path / "size.npz").write_bytes(bytes(raw))
    refused(tmp_path / "size.npz", "size.npz")
    raw = bytearray(archive(tmp_path / "b.npz", [("x.npy", npy(X))]).read_bytes())
    struct.pack_into("<I", raw, raw.find(b"PK\x01\x02") + 16, 0)  # CRC
    (tmp_path / "crc.npz").write_bytes(bytes(raw))
    refused(tmp_path / "crc.npz", "CRC")


def _header(text: str, version: int = 1) -> bytes:
    body = text.encode() + b" " * (-(len(text) + 11) % 64) + b"\n"
    size = struct.pack("<H" if version == 1 else "<I", len(body))
    return b"\x93NUMPY" + bytes([version, 0]) + size + body


@pytest.mark.parametrize(("header", "fragment"), [
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }",
     "dimension over the limit"),
    ("{'descr': '<i4', 'fortran_order': False, 'shape': (" + "1" + "0" * 30 + ",), }",
     "dimension over the limit"),
    ("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "Python objects"),
    ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured"),
    ("{'descr': '<U4', 'fortran_order': False, 'shape': (3,), }", "not a numeric type"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }",
     "over the limit of 1073741824"),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (8, 16), }", "holds only 256"),
])
def test_header_hazards(tmp_path: Path, header: str, fragment: str) -> None:
    member = _header(header) + npy(X)[128:]
    refused(archive(tmp_path / "h.npz", [("x.npy", member)]), "h.npz:x.npy", fragment)
    (tmp_path / "ids.npy").write_bytes(member)
    if "1073741824" not in fragment:  # a data file's size is bounded by the file alone
        refused(tmp_path / "ids.npy", fragment)


def test_header_length_claim_refused_before_reading(tmp_path: Path) -> None:
    (tmp_path / "ids.npy").write_bytes(b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'")
    refused(tmp_path / "ids.npy", "header claims 4294967295 bytes")


def test_data_file_size_must_match(tmp_path: Path) -> None:
    (tmp_path / "ids.npy").write_bytes(npy(np.arange(10, dtype=np.int32)) + b"\0\0\0\0")
    refused(tmp_path / "ids.npy", "trailing data")
    (tmp_path / "ids.npy").write_bytes(npy(np.arange(10, dtype=np.int32))[:-4])
    refused(tmp_path / "ids.npy", "holds only 36")


def test_bounded_documents(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(UserFileError, match="nested 10000 deep, over the limit of 64"):
        load_json_file(str(tmp_path / "deep.json"))
    (tmp_path / "twice.json").write_text('{"a": 1, "a": 2}')
    with pytest.raises(UserFileError, match="'a' appears twice"):
        load_json_file(str(tmp_path / "twice.json"))
    with pytest.raises(UserFileError, match="not a regular file"):
        load_json_file("/dev/zero")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(8))
    with pytest.raises(UserFileError, match="expands to over 100000 values"):
        load_yaml_text(bomb, "bomb.yaml")
    with pytest.raises(UserFileError, match="names the key 'seed' twice"):
        load_yaml_text("seed: 1\nseed: 2\n", "twice.yaml")
    with pytest.raises(UserFileError, match="nested too deep"):
        load_yaml_text("a: " + "[" * 100 + "]" * 100, "deep.yaml")
