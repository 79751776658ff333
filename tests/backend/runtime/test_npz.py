"""`run --inputs` files are read with every size bounded before numpy allocates (issue 16):
a header that claims more than its member holds, Python objects, a file that is no zip."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.npz import read_npz
from nxcc.backend.runtime.status import NrtError, NrtStatus


def _npz(path: Path, member: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", member)
    return path


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def test_reads_arrays(tmp_path: Path) -> None:
    np.savez(tmp_path / "ok.npz", x=np.arange(6.0).reshape(2, 3))
    assert read_npz(str(tmp_path / "ok.npz"))["x"].shape == (2, 3)


@pytest.mark.parametrize(("member", "fragment"), [
    (_npy(np.ones((4, 16), np.float32)).replace(b"(4, 16)", b"(100000, 100000)"),
     "takes 40000000000 bytes, over the limit"),
    (_npy(np.array([{"a": 1}], dtype=object)), "holds Python objects"),
    (b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4', ", "cannot read inputs"),
    (_npy(np.ones(3, np.int32)).replace(b"(3,)", b"(10**30, 0)".replace(b"10**30", b"1" + b"0" * 30)),
     "dimension over the limit"),
    (_npy(np.ones((2, 2), np.float32)).replace(b"(2, 2)", b"(8, 8)"), "but holds only 16"),
])
def test_refused_before_allocation(tmp_path: Path, member: bytes, fragment: str) -> None:
    with pytest.raises(NrtError) as err:
        read_npz(str(_npz(tmp_path / "bad.npz", member)))
    assert err.value.status is NrtStatus.EXEC_BAD_INPUT
    assert fragment in str(err.value)


def test_not_a_zip(tmp_path: Path) -> None:
    (tmp_path / "x.npz").write_bytes(b"plain text")
    with pytest.raises(NrtError, match="cannot read inputs"):
        read_npz(str(tmp_path / "x.npz"))


def test_write_npz_keeps_every_name(tmp_path: Path) -> None:
    """An output may be named as np.savez's own parameters are; the archive is np.load's."""
    from nxcc.backend.userfiles.npz import write_npz

    arrays = {"file": np.arange(3, dtype=np.int32), "allow_pickle": np.ones((2, 2), np.float16),
              "y": np.array(2.5)}
    path = tmp_path / "out.npz"
    with open(path, "wb") as f:
        write_npz(f, arrays)
    with np.load(path) as got:
        assert sorted(got.files) == sorted(arrays)
        for name, arr in arrays.items():
            assert got[name].dtype == arr.dtype
            np.testing.assert_array_equal(got[name], arr)
    assert read_npz(str(path)).keys() == arrays.keys()
