"""Weights of an uncompressed NEFF are mapped, not copied, and still validated."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nxcc.backend.neff import NeffError, read_neff
from nxcc.backend.neff.mapped import MappedMembers
from nxcc.backend.neff.payload import payload_chunks
from nxcc.backend.program import package
from nxcc.backend.runtime.checked_neff import read_checked_weights
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions


def _model(path: Path, rows: int = 64, cols: int = 48) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((rows, cols)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(cols).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "lin", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, cols])], [w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _compile(model: Path, out: Path, fast: bool) -> Path:
    compile_model(str(model), CompileOptions(target="trn1", output=str(out), fast_loading=fast),
                  emit=lambda s: None)
    return out


def _maps_a_file(arr: np.ndarray) -> bool:
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, mmap.mmap)


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    return _model(tmp_path / "lin.onnx")


def test_uncompressed_weights_are_read_only_views_of_the_mapped_file(model: Path,
                                                                      tmp_path: Path) -> None:
    plain = read_neff(_compile(model, tmp_path / "plain.neff", fast=True))
    packed = read_neff(_compile(model, tmp_path / "packed.neff", fast=False))
    assert isinstance(plain.files, MappedMembers) and isinstance(packed.files, dict)
    mapped, copied = read_checked_weights(plain), read_checked_weights(packed)
    assert mapped.keys() == copied.keys() and mapped
    for name, arr in mapped.items():
        assert not arr.flags.owndata and not arr.flags.writeable and _maps_a_file(arr)
        np.testing.assert_array_equal(arr, copied[name])
        assert not _maps_a_file(copied[name])
    x = {"x": np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)}
    np.testing.assert_array_equal(LoadedModel(plain).execute(x)["y"],
                                  LoadedModel(packed).execute(x)["y"])


def test_weight_data_starts_64_byte_aligned_in_the_file(model: Path, tmp_path: Path) -> None:
    neff = read_neff(_compile(model, tmp_path / "plain.neff", fast=True))
    for name, arr in read_checked_weights(neff).items():
        offset, size = neff.files.span(neff.manifest["weights"]["files"][name])
        assert (offset + size - arr.nbytes) % 64 == 0


def test_large_weights_leave_the_payload_uncompressed(model: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(package, "COMPRESS_WEIGHTS_UP_TO", 1000)
    neff = read_neff(_compile(model, tmp_path / "big.neff", fast=False))
    assert isinstance(neff.files, MappedMembers)


def _weight_span(path: Path) -> tuple[int, int]:
    neff = read_neff(path)
    member = max(neff.manifest["weights"]["files"].values(),
                 key=lambda m: neff.files.span(m)[1])
    return neff.files.span(member)


def test_a_damaged_mapped_weight_is_refused(model: Path, tmp_path: Path) -> None:
    path = _compile(model, tmp_path / "plain.neff", fast=True)
    offset, size = _weight_span(path)
    good = path.read_bytes()
    data = bytearray(good)
    data[offset + size - 5] ^= 0x40  # a bit of the weight's data: only the hash sees it
    path.write_bytes(bytes(data))
    with pytest.raises(NeffError, match="hash mismatch"):
        read_neff(path, validate_hash=True)
    assert read_neff(path).hash_ok is False
    data = bytearray(good)
    header = bytes(data[offset:offset + 128])
    shape_at = header.index(b"'shape': (") + len(b"'shape': (")
    data[offset + shape_at] = ord("9")  # the header now declares more data than it holds
    path.write_bytes(bytes(data))
    with pytest.raises(NeffError, match="weight declares"):
        read_checked_weights(read_neff(path))
    data = bytearray(good)
    data[offset:offset + 6] = b"NOTNPY"
    path.write_bytes(bytes(data))
    with pytest.raises(NeffError, match="malformed .npy"):
        LoadedModel(read_neff(path))


def test_large_weight_neffs_are_byte_reproducible(model: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(package, "COMPRESS_WEIGHTS_UP_TO", 1000)
    a = _compile(model, tmp_path / "a.neff", fast=False).read_bytes()
    b = _compile(model, tmp_path / "b.neff", fast=False).read_bytes()
    assert a == b


def test_streamed_payload_is_the_tar_tarfile_writes() -> None:
    import io
    import tarfile

    files = {"neff.json": b"{}", "weights/w0.npy": (b"\x93NUMPY" + bytes(58),
                                                     memoryview(np.arange(300.0)))}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            parts = files[name] if isinstance(files[name], tuple) else (files[name],)
            data = b"".join(bytes(p) for p in parts)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uname, info.gname = len(data), 0o644, "", ""
            tar.addfile(info, io.BytesIO(data))
    assert b"".join(bytes(c) for c in payload_chunks(files)) == buf.getvalue()


def test_only_large_weights_that_do_not_compress_skip_gzip() -> None:
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(2_000_000).astype(np.float32)  # 8 MB
    assert not package.weights_compress([noise])
    assert package.weights_compress([np.zeros(2_000_000, np.float32)])
    assert package.weights_compress([noise[:1000]])
