"""The same module and flags give byte-identical NEFFs; the uuid follows the content."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.backend.neff import read_neff, write_neff
from tests.cli_helpers import MODELS, neuronx_cc


def _write(path: Path, files: dict[str, bytes], name: str = "m") -> bytes:
    write_neff(path, manifest={"inputs": []}, files=files, name=name, num_tpb=1, lnc_size=1)
    return path.read_bytes()


def test_uuid_is_derived_from_the_content(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.neff", {"w.bin": b"1"})
    assert _write(tmp_path / "b.neff", {"w.bin": b"1"}) == a
    uuids = {read_neff(tmp_path / f"{n}.neff").header.uuid for n in "ab"}
    _write(tmp_path / "c.neff", {"w.bin": b"2"})
    _write(tmp_path / "d.neff", {"w.bin": b"1"}, name="other")
    uuids |= {read_neff(tmp_path / f"{n}.neff").header.uuid for n in "cd"}
    assert len(uuids) == 3


@pytest.mark.parametrize("flags", [(), ("-O3", "--enable-fast-loading-neuron-binaries")])
def test_compiling_twice_without_the_cache_gives_the_same_bytes(flags: tuple[str, ...],
                                                                tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"{i}.neff"
        r = neuronx_cc("compile", str(MODELS / "cnn_bn_ts17.onnx"), "--target", "trn1",
                       "--no-cache", "-o", str(out), *flags, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
