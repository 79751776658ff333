"""Tests of the NEFF container: header layout, payload tar, atomic write, refusals."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import tarfile
import uuid
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import (
    FEATURE_VNC,
    HEADER_SIZE,
    NEFF_VERSION_MAJOR,
    NEFF_VERSION_MINOR,
    PKG_VERSION,
    NeffError,
    NeffHeader,
    build_payload,
    dump_npy,
    load_npy,
    read_neff,
    read_payload,
    write_neff,
)

MANIFEST = {"version": 1, "subgraphs": ["sg00"], "inputs": [{"name": "x", "shape": [2, 3]}]}
FILES = {
    "sg00/program.json": b'{"ops": []}',
    "weights/w0.npy": dump_npy(np.arange(6, dtype=np.float32).reshape(2, 3)),
}


def _write(path: Path, *, compress: bool = True, **kwargs: object) -> NeffHeader:
    params: dict[str, object] = {
        "manifest": MANIFEST,
        "files": FILES,
        "name": "model",
        "num_tpb": 2,
        "lnc_size": 1,
        "compress": compress,
    }
    params.update(kwargs)
    return write_neff(path, **params)  # type: ignore[arg-type]


def _md5_field(payload: bytes) -> bytes:
    """The header's hash field for `payload`, built here from the documented encoding: the
    MD5's four 32-bit words each stored little-endian, then 16 zero bytes."""
    words = struct.unpack(">4I", hashlib.md5(payload).digest())
    return struct.pack("<4I", *words) + bytes(16)


def _write_raw(path: Path, payload: bytes) -> None:
    """Write a NEFF with a hand-made payload and an otherwise valid header."""
    header = NeffHeader(
        hash=_md5_field(payload),
        uuid=uuid.uuid4(),
        name="raw",
        data_size=len(payload),
        num_tpb=1,
        lnc_size=1,
    )
    path.write_bytes(header.pack() + payload)


def _refused(path: Path, match: str, **kwargs: bool) -> str:
    """Assert read_neff refuses with a one-line message naming the file and ``match``."""
    with pytest.raises(NeffError) as info:
        read_neff(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert match in message
    return message


# --- round trip and layout --------------------------------------------------


@pytest.mark.parametrize("compress", [True, False])
def test_round_trip(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / "model.neff"
    written = _write(path, compress=compress, lnc_size=2)
    neff = read_neff(path, validate_hash=True)
    assert neff.header == written
    assert neff.hash_ok is True
    assert neff.manifest == MANIFEST
    assert neff.files == FILES
    assert neff.path == path
    h = neff.header
    assert (h.name, h.num_tpb, h.requested_tpb_count, h.lnc_size) == ("model", 2, 2, 2)
    assert (h.neff_version_major, h.neff_version_minor) == (NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR)
    assert h.pkg_version == PKG_VERSION
    assert h.build_version.startswith("nxcc-")
    assert h.feature_bits == FEATURE_VNC  # the real tool's bit for a logical core of two
    assert h.hash_algorithm == "md5"
    assert h.data_size == path.stat().st_size - HEADER_SIZE
    raw = path.read_bytes()[HEADER_SIZE:]
    assert raw[:2] == b"\x1f\x8b" if compress else raw[:2] != b"\x1f\x8b"
    np.testing.assert_array_equal(
        load_npy(neff.files["weights/w0.npy"]), np.arange(6, dtype=np.float32).reshape(2, 3)
    )
    json.dumps(h.to_dict())
    assert h.to_dict()["hash"] == h.hash.hex()
    assert h.to_dict()["uuid"] == str(h.uuid)


def test_header_offsets(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    h = _write(path, name="mödel", build_version="nxcc-test", lnc_size=2)
    data = path.read_bytes()
    assert len(h.pack()) == HEADER_SIZE
    assert data[:HEADER_SIZE] == h.pack()

    def u64(off: int) -> int:
        return struct.unpack_from("<Q", data, off)[0]

    def u32(off: int) -> int:
        return struct.unpack_from("<I", data, off)[0]

    assert u64(0) == PKG_VERSION
    assert u64(8) == HEADER_SIZE
    assert u64(16) == len(data) - HEADER_SIZE == h.data_size
    assert u64(24) == NEFF_VERSION_MAJOR
    assert u64(32) == NEFF_VERSION_MINOR
    assert data[40:168] == b"nxcc-test".ljust(128, b"\0")
    assert u32(168) == 2
    assert data[172:204] == _md5_field(data[HEADER_SIZE:])
    assert data[204:220] == h.uuid.bytes
    assert data[220:476] == "mödel".encode().ljust(256, b"\0")
    assert u32(476) == 2
    assert data[480:544] == bytes([2]) + bytes(63)
    assert u64(544) == FEATURE_VNC
    assert u32(552) == 2
    assert data[556:HEADER_SIZE] == bytes(468)


def test_payload_is_reproducible() -> None:
    for compress in (True, False):
        a = build_payload(dict(reversed(list(FILES.items()))), compress)
        b = build_payload(FILES, compress)
        assert a == b
        assert read_payload(a, "x") == FILES


# --- refusals ---------------------------------------------------------------


def test_flipped_payload_byte(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write(path, compress=False)
    data = bytearray(path.read_bytes())
    # flip a byte inside the program.json contents so the tar stays readable
    pos = data.index(b'{"ops": []}', HEADER_SIZE)
    data[pos + 2] ^= 0x01
    path.write_bytes(bytes(data))
    message = _refused(path, "payload hash mismatch", validate_hash=True)
    assert "header says" in message and "payload is" in message
    neff = read_neff(path)
    assert neff.hash_ok is False


def test_truncated(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    h = _write(path)
    path.write_bytes(path.read_bytes()[:-10])
    _refused(path, f"truncated: header says {h.data_size} payload bytes, file has")


def test_trailing_garbage(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write(path)
    with path.open("ab") as f:
        f.write(b"garbage")
    _refused(path, "trailing bytes: 7 bytes after")


def test_unknown_major_version(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 24, 7)
    path.write_bytes(bytes(data))
    message = _refused(path, "unsupported NEFF major version 7")
    assert "supports 1, 2" in message


def test_feature_word_is_the_producers(tmp_path: Path) -> None:
    """The word at 544 is the real tool's feature bits (0x209c00 in a trn2 NEFF): read and
    shown, never refused."""
    path = tmp_path / "model.neff"
    _write(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 544, 0x209C00)
    path.write_bytes(bytes(data))
    assert read_neff(path, validate_hash=True).header.feature_bits == 0x209C00


def test_bad_lnc_size(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 552, 100)
    path.write_bytes(bytes(data))
    _refused(path, "invalid lnc_size 100")


def test_not_a_neff_short_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.neff"
    path.write_text("hello, I am a text file\n")
    _refused(path, "not a NEFF: 24 bytes, shorter than the 1024-byte header")


def test_not_a_neff_long_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.neff"
    path.write_text("lorem ipsum dolor sit amet\n" * 100)
    _refused(path, "not a NEFF: header_size field is")


def test_no_such_file(tmp_path: Path) -> None:
    _refused(tmp_path / "missing.neff", "no such file")


def test_missing_manifest(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, build_payload({"sg00/program.json": b"{}"}, True))
    _refused(path, "payload has no neff.json")


def test_manifest_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, build_payload({"neff.json": b"[1, 2]"}, False))
    _refused(path, "neff.json must hold a JSON object")


def _tar_with(member: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        manifest = json.dumps({}).encode()
        info = tarfile.TarInfo("neff.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        member.size = len(data) if member.isreg() else 0
        tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return gzip.compress(buf.getvalue(), mtime=0)


def test_path_traversal_member(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, _tar_with(tarfile.TarInfo("../evil"), b"pwned"))
    _refused(path, "payload member '../evil': path traversal")


def test_absolute_member(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, _tar_with(tarfile.TarInfo("/etc/evil"), b"pwned"))
    _refused(path, "payload member '/etc/evil': absolute path")


def test_symlink_member(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    link = tarfile.TarInfo("link")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    _write_raw(path, _tar_with(link))
    _refused(path, "payload member 'link' is not a regular file")


def test_corrupt_tar(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, gzip.compress(b"not a tar archive" * 50, mtime=0))
    _refused(path, "corrupt tar payload")


@pytest.mark.parametrize("compress", [True, False])
def test_gzip_or_plain_told_by_magic(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / "model.neff"
    _write_raw(path, build_payload({"neff.json": b"{}"}, compress))
    assert read_neff(path, validate_hash=True).manifest == {}


def test_malformed_npy() -> None:
    with pytest.raises(NeffError, match="malformed .npy"):
        load_npy(b"definitely not numpy", "model.neff:weights/w0.npy")
    truncated = dump_npy(np.zeros(100, dtype=np.float64))[:-8]
    with pytest.raises(NeffError) as info:
        load_npy(truncated, "model.neff:weights/w0.npy")
    assert str(info.value).startswith("model.neff:weights/w0.npy: malformed .npy")
    assert "\n" not in str(info.value)


# --- writer contract --------------------------------------------------------


def test_writer_refuses_bad_header_values(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    with pytest.raises(NeffError, match="invalid lnc_size 3"):
        _write(path, lnc_size=3)
    with pytest.raises(NeffError, match="name is 300 bytes"):
        _write(path, name="x" * 300)
    with pytest.raises(ValueError, match="path traversal"):
        _write(path, files={"../evil": b""})
    assert list(tmp_path.iterdir()) == []


def _assert_untouched(directory: Path, path: Path, original: bytes) -> None:
    assert path.read_bytes() == original
    assert sorted(p.name for p in directory.iterdir()) == [path.name]


def test_atomic_write_replace_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.neff"
    path.write_bytes(b"previous contents")

    def boom(src: object, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        _write(path)
    _assert_untouched(tmp_path, path, b"previous contents")


def test_atomic_write_keyboard_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.neff"
    path.write_bytes(b"previous contents")

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        _write(path)
    _assert_untouched(tmp_path, path, b"previous contents")


def test_atomic_write_serialization_error(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    path.write_bytes(b"previous contents")
    with pytest.raises(TypeError):
        _write(path, files={"weights/w0.npy": np.zeros(3)})
    with pytest.raises(TypeError):
        _write(path, manifest={"bad": object()})
    _assert_untouched(tmp_path, path, b"previous contents")


def _recorded_links(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The destination of every os.link from now on (the links still made)."""
    made: list[str] = []
    link = os.link

    def recording(src: object, dst: str, **kwargs: object) -> None:
        link(src, dst, **kwargs)  # type: ignore[arg-type]
        made.append(os.path.basename(dst))

    monkeypatch.setattr(os, "link", recording)
    return made


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="O_TMPFILE is Linux's")
def test_atomic_write_of_a_new_file_never_names_a_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new target is linked straight to the unnamed file: no moment in which a kill could
    leave a temporary name behind."""
    made = _recorded_links(monkeypatch)
    path = tmp_path / "model.neff"
    _write(path)
    assert made == ["model.neff"]
    assert read_neff(path, validate_hash=True).manifest == MANIFEST
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="O_TMPFILE is Linux's")
def test_atomic_write_over_a_file_renames_from_a_temporary_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.neff"
    path.write_bytes(b"previous contents")
    made = _recorded_links(monkeypatch)
    _write(path)
    assert len(made) == 1 and made[0].startswith(".model.neff.") and made[0].endswith(".tmp")
    assert read_neff(path, validate_hash=True).manifest == MANIFEST
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_atomic_write_replaces_on_success(tmp_path: Path) -> None:
    path = tmp_path / "model.neff"
    path.write_bytes(b"previous contents")
    _write(path)
    assert read_neff(path, validate_hash=True).manifest == MANIFEST
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
