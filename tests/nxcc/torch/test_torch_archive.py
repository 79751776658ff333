"""The saved-module format of nxcc.torch: a round trip, and every malformed file refused in one
line naming the file (no NEFF is compiled here: the archive does not look inside it)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the torch extra is not installed (pip install '.[torch]')")

from nxcc.errors import NEFF_CONTAINER, Error  # noqa: E402
from nxcc.torch import archive  # noqa: E402
from nxcc.torch.export import Signature, TensorSpec  # noqa: E402

SIGNATURE = Signature(
    inputs={"tuple": [{"tensor": 0}, {"dict": [["mask", {"tensor": 1}], ["k", {"const": 4}]]}]},
    outputs={"tuple": [{"tensor": 0}, {"list": [{"tensor": 1}]}]},
    input_tensors=(TensorSpec("x", "float32", (2, 3)), TensorSpec("mask", "bool", (2,))),
    output_tensors=(TensorSpec("y", "bfloat16", (2, 3)), TensorSpec("z", "int64", ())),
)
NEFF = b"NEFF bytes are the runtime's to check"


def manifest_of(path: Path) -> dict:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read(archive.MANIFEST))


def rewrite(path: Path, members: dict[str, bytes],
            compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_round_trip_through_a_file_and_a_buffer(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    archive.write(path, NEFF, SIGNATURE)
    assert archive.read(path) == (NEFF, SIGNATURE)
    assert archive.read(str(path)) == (NEFF, SIGNATURE)
    buffer = io.BytesIO()
    archive.write(buffer, NEFF, SIGNATURE)
    buffer.seek(0)
    assert archive.read(buffer) == (NEFF, SIGNATURE)
    with zipfile.ZipFile(path) as zf:  # nothing pickled, nothing compressed
        assert zf.namelist() == [archive.MANIFEST, archive.NEFF]
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]  # no temporary file left


def test_a_failed_save_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    path = tmp_path / "model.pt"
    archive.write(path, NEFF, SIGNATURE)

    def broken(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(archive, "_write_zip", broken)
    with pytest.raises(OSError):
        archive.write(path, b"other", SIGNATURE)
    assert archive.read(path) == (NEFF, SIGNATURE)
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]


def good_manifest(tmp_path: Path) -> dict:
    path = tmp_path / "good.pt"
    archive.write(path, NEFF, SIGNATURE)
    return manifest_of(path)


BAD_MANIFESTS = [
    ("format", "nxcc.jax", "says format 'nxcc.jax'"),
    ("version", 2, "format version 2"),
    ("input_tensors", [["x", "float128", [2]]], "input_tensors[0] must be"),
    ("input_tensors", [["x", "float32", [-1]]], "input_tensors[0] must be"),
    ("output_tensors", "y", "output_tensors must be a list"),
    ("inputs", {"tuple": [{"tensor": 1}, {"tensor": 0}]}, "do not number"),
    ("inputs", {"tensor": 0, "const": 1}, "one-key object"),
    ("inputs", {"tuple": [{"tensor": 0}, {"tensor": 1}, {"set": []}]}, "not a structure node"),
    ("outputs", {"dict": [[1.5, {"tensor": 0}]]}, "a dict item must be"),
]


@pytest.mark.parametrize("key,value,fragment", BAD_MANIFESTS)
def test_a_bad_manifest_is_one_line(tmp_path: Path, key: str, value: object,
                                    fragment: str) -> None:
    manifest = good_manifest(tmp_path)
    manifest[key] = value
    path = rewrite(tmp_path / "bad.pt", {archive.MANIFEST: json.dumps(manifest).encode(),
                                         archive.NEFF: NEFF})
    with pytest.raises(archive.ArchiveError) as err:
        archive.read(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and fragment in message and "\n" not in message
    assert isinstance(err.value, Error) and err.value.code == NEFF_CONTAINER


@pytest.mark.parametrize("depth,fragment", [(100, "nested more than 64 levels"),
                                             (100_000, "nested too deeply")])
def test_deep_nesting_is_refused(tmp_path: Path, depth: int, fragment: str) -> None:
    manifest = good_manifest(tmp_path)
    manifest["outputs"] = "OUTPUTS"
    deep = '{"tuple": [' * depth + '{"tensor": 0}' + "]}" * depth
    text = json.dumps(manifest).replace('"OUTPUTS"', deep)
    path = rewrite(tmp_path / "deep.pt", {archive.MANIFEST: text.encode(), archive.NEFF: NEFF})
    with pytest.raises(archive.ArchiveError, match=fragment):
        archive.read(path)


def test_files_that_are_not_saved_modules(tmp_path: Path) -> None:
    cases = {
        "missing.pt": (None, "no such file"),
        "text.pt": (b"hello", "not a zip archive"),
        "script.pt": ({"model/data.pkl": b"", "model/code/__torch__.py": b""},
                      "a TorchScript archive (torch.jit.save)"),
        "no_neff.pt": ({archive.MANIFEST: b"{}"}, "has no model.neff"),
        "not_json.pt": ({archive.MANIFEST: b"{", archive.NEFF: NEFF}, "is not JSON"),
        "list.pt": ({archive.MANIFEST: b"[]", archive.NEFF: NEFF}, "not a JSON object"),
    }
    for name, (content, fragment) in cases.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, dict):
            rewrite(path, content)
        with pytest.raises(archive.ArchiveError) as err:
            archive.read(path)
        assert fragment in str(err.value) and str(path) in str(err.value), name
    deflated = rewrite(tmp_path / "deflated.pt", {archive.MANIFEST: b"{}", archive.NEFF: NEFF},
                       zipfile.ZIP_DEFLATED)
    with pytest.raises(archive.ArchiveError, match="is compressed"):
        archive.read(deflated)
    with pytest.raises(archive.ArchiveError, match="is a directory"):
        archive.read(tmp_path)
