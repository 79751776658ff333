"""nxcc's own header follows the real tool's (decoded here with `struct` alone), and a NEFF
in nxcc 0.2's format (package version 1, SHA-256, its own feature bits at 544) still runs."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import build_payload, read_neff
from nxcc.backend.runtime.model import LoadedModel
from tests.backend.neff.mutants import compile_example, unpack
from tests.inprocess import run_cli
from tests.paths import REPO

LAYOUT = struct.Struct("<QQQQQ128sI32s16s256sI64sQI468s")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example(tmp_path_factory.mktemp("mlp") / "mlp.neff")


def test_header_decoded_with_struct_alone(mlp: Path) -> None:
    data = mlp.read_bytes()
    (pkg, size, data_size, major, minor, build, num_tpb, digest, _uuid, name, requested,
     per_node, features, lnc, pad) = LAYOUT.unpack_from(data, 0)
    payload = data[1024:]
    words = struct.unpack(">4I", hashlib.md5(payload).digest())
    assert (pkg, size, data_size, major, minor) == (2, 1024, len(payload), 2, 0)
    assert digest == struct.pack("<4I", *words) + bytes(16)
    assert build.rstrip(b"\0").startswith(b"nxcc-")
    assert (num_tpb, requested, per_node[0], lnc, features) == (1, 1, 1, 1, 0)
    assert name.rstrip(b"\0") and pad == bytes(468)


def test_lnc2_header_has_the_real_vnc_bit(tmp_path: Path) -> None:
    out = tmp_path / "mlp2.neff"
    r = run_cli("compile", str(REPO / "examples" / "mlp.onnx"),
                "--target", "trn2", "--output", str(out), "--logfile", str(tmp_path / "l"))
    assert r.status == 0, r.stderr
    fields = LAYOUT.unpack_from(out.read_bytes(), 0)
    # one logical core of two physical cores: num_tpb 1, lnc_size 2, feature bit 0x400
    assert (fields[6], fields[13], fields[12]) == (1, 2, 0x400)
    assert len(read_neff(out).manifest["subgraphs"]) == 2


def _as_version_0_2(src: Path, dst: Path) -> Path:
    """`src` rewritten as nxcc 0.2 wrote NEFFs: package version 1, the payload's SHA-256,
    feature bit 0x2 for its plain tar payload, a tpb count per program."""
    header, members = unpack(src)
    payload = build_payload(members, compress=False)
    fields = list(LAYOUT.unpack_from(header.pack(), 0))
    fields[0] = 1
    fields[2] = len(payload)
    fields[5] = b"nxcc-0.2.0+nxcc".ljust(128, b"\0")
    fields[7] = hashlib.sha256(payload).digest()
    fields[11] = bytes(64)
    fields[12] = 0x2
    dst.write_bytes(LAYOUT.pack(*fields) + payload)
    return dst


def test_a_version_0_2_neff_still_loads_and_runs(mlp: Path, tmp_path: Path) -> None:
    old = _as_version_0_2(mlp, tmp_path / "old.neff")
    neff = read_neff(old, validate_hash=True)
    assert neff.header.pkg_version == 1 and neff.header.hash_algorithm == "sha256"
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    name = neff.manifest["inputs"][0]["name"]
    got = LoadedModel(neff).execute({name: x})
    want = LoadedModel(read_neff(mlp)).execute({name: x})
    assert list(got) == list(want) and got
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
    shown = run_cli("inspect-neff", str(old))
    assert shown.status == 0 and "sha256" in shown.stdout and "OK" in shown.stdout
