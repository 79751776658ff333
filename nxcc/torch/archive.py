"""The file `nxcc.torch.save` writes and `nxcc.torch.load` reads (a traced module, NEFF inside).

A zip archive with its members stored uncompressed (as TorchScript's `.pt` files are zips):

    nxcc-torch.json   {"format": "nxcc.torch", "version": 1, "nxcc": ..., "torch": ...,
                       "inputs": structure, "outputs": structure,
                       "input_tensors": [[name, dtype, shape], ...], "output_tensors": [...]}
    model.neff        the compiled model

Nothing is pickled. The reader checks the archive, the JSON (types, dtype names, the
structures against the tensor lists) and leaves the NEFF to the runtime's own checks; any
fault is one `ArchiveError` line naming the file. A save is written to a temporary file
beside the target and renamed, so a failed save never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any

import torch

from nxcc.errors import NeffError
from nxcc.torch.export import Signature, TensorSpec
from nxcc.torch.structure import StructureError, check
from nxcc.torch.tensors import DTYPE_NAMED
from nxcc.version import __version__

FORMAT = "nxcc.torch"
VERSION = 1
MANIFEST = "nxcc-torch.json"
NEFF = "model.neff"
#: The manifest is small; a larger one is not ours.
MAX_MANIFEST = 16 << 20
MAX_RANK = 64

Target = str | os.PathLike[str] | IO[bytes]


class ArchiveError(NeffError):
    """A file that is not a readable traced module (NRT_INVALID, as a NEFF that cannot be
    read): `str()` is `<file>: <problem>`."""


def write(target: Target, neff: bytes, signature: Signature) -> None:
    """Write the archive of `neff` and `signature` to `target` (a path, written atomically,
    or a binary file object)."""
    manifest = {
        "format": FORMAT, "version": VERSION,
        "nxcc": _nxcc_version(), "torch": torch.__version__,
        "inputs": signature.inputs, "outputs": signature.outputs,
        "input_tensors": [[s.name, s.dtype, list(s.shape)] for s in signature.input_tensors],
        "output_tensors": [[s.name, s.dtype, list(s.shape)] for s in signature.output_tensors],
    }
    if not isinstance(target, str | os.PathLike):
        _write_zip(target, manifest, neff)
        return
    path = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_zip(f, manifest, neff)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _write_zip(f: IO[bytes], manifest: dict[str, Any], neff: bytes) -> None:
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(MANIFEST, json.dumps(manifest, indent=1))
        zf.writestr(NEFF, neff)


def read(source: Target) -> tuple[bytes, Signature]:
    """(the NEFF, the signature) of the archive at `source`; ArchiveError if it is not one."""
    name = os.fspath(source) if isinstance(source, str | os.PathLike) else \
        getattr(source, "name", "the file")
    try:
        with zipfile.ZipFile(source) as zf:
            members = {i.filename: i for i in zf.infolist()}
            if MANIFEST not in members:
                raise ArchiveError(name, _what_instead(members))
            for member in (MANIFEST, NEFF):
                info = members.get(member)
                if info is None:
                    raise ArchiveError(name, f"the archive has no {member}")
                if info.compress_type != zipfile.ZIP_STORED:
                    raise ArchiveError(name, f"{member} is compressed; nxcc.torch.save "
                                       "stores its members as they are")
            if members[MANIFEST].file_size > MAX_MANIFEST:
                raise ArchiveError(name, f"{MANIFEST} is over {MAX_MANIFEST} bytes")
            manifest = json.loads(zf.read(MANIFEST))
            neff = zf.read(NEFF)
    except FileNotFoundError:
        raise ArchiveError(name, "no such file") from None
    except IsADirectoryError:
        raise ArchiveError(name, "is a directory") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise ArchiveError(name, f"not a saved nxcc.torch module (not a zip archive: "
                           f"{exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveError(name, f"{MANIFEST} is not JSON ({exc})") from None
    except RecursionError:
        raise ArchiveError(name, f"{MANIFEST} is nested too deeply to be ours") from None
    except OSError as exc:
        raise ArchiveError(name, f"cannot read it ({exc.strerror or exc})") from None
    return neff, _signature(manifest, name)


def _what_instead(members: dict[str, zipfile.ZipInfo]) -> str:
    if any(n.endswith("data.pkl") or "/code/" in n for n in members):
        return ("a TorchScript archive (torch.jit.save), not a module traced by nxcc; trace "
                "the model with nxcc.torch.trace and save it with nxcc.torch.save")
    return f"not a saved nxcc.torch module (no {MANIFEST} in the archive)"


def _signature(manifest: object, name: str) -> Signature:
    if not isinstance(manifest, dict):
        raise ArchiveError(name, f"{MANIFEST} is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise ArchiveError(name, f"{MANIFEST} says format {manifest.get('format')!r}, "
                           f"not {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise ArchiveError(name, f"format version {manifest.get('version')!r}; this nxcc "
                           f"reads version {VERSION}: save the module again with this nxcc")
    try:
        inputs_t = _tensors(manifest.get("input_tensors"), "input_tensors")
        outputs_t = _tensors(manifest.get("output_tensors"), "output_tensors")
        inputs = check(manifest.get("inputs"), len(inputs_t), "inputs")
        outputs = check(manifest.get("outputs"), len(outputs_t), "outputs")
    except StructureError as exc:
        raise ArchiveError(name, f"{MANIFEST}: {exc}") from None
    if next(iter(inputs)) != "tuple":
        raise ArchiveError(name, f"{MANIFEST}: inputs must be a tuple structure")
    return Signature(inputs, outputs, inputs_t, outputs_t)


def _tensors(value: object, key: str) -> tuple[TensorSpec, ...]:
    if not isinstance(value, list):
        raise StructureError(f"{key} must be a list")
    specs = []
    for i, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and item[1] in DTYPE_NAMED and isinstance(item[2], list)
                and len(item[2]) <= MAX_RANK
                and all(type(d) is int and d >= 0 for d in item[2])):
            raise StructureError(f"{key}[{i}] must be [name, dtype, [non-negative dims]] "
                                 f"with a dtype of {', '.join(DTYPE_NAMED)}; found {item!r:.80}")
        specs.append(TensorSpec(item[0], item[1], tuple(item[2])))
    return tuple(specs)


def _nxcc_version() -> str:
    return __version__
