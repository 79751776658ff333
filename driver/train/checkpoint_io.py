"""Sharded checkpoints on disk: `exp_dir/checkpoints/step_N/`, committed by `latest`.

A checkpoint is a folder of `.npz` files, one per (TP, PP) rank for the parameters
(`params_tp{t}_pp{p}.npz`) and one per DP rank for the optimizer state
(`optim_dp{d}_tp{t}_pp{p}.npz`, ZeRO-1 shards), and `checkpoint.json`: the step, the
layout, the data position and each file's size and SHA-256. Every file is written
atomically (an unnamed file given its name at the end, `backend.neff.atomic`), the
manifest after the shards, and `checkpoints/latest` (the folder's name) last: a checkpoint
exists once `latest` names it, so a run killed at any point leaves the previous one in
force. Reading checks each file against the manifest: a truncated or altered file is
refused with one line (`NCC_ETRN002`), never used.

Ranks in several processes each write their own shards with `write_shard`; one of them
then calls `commit` (which hashes the files it finds). `write_checkpoint` does both.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeGuard

import numpy as np

from nxcc import errors
from nxcc.backend.neff.atomic import atomic_file
from nxcc.backend.userfiles import UserFileError, read_regular
from nxcc.backend.userfiles.npz import NpzArchive, write_npz
from nxcc.backend.userfiles.structured import load_json_file
from nxcc.driver.errors import CompileError

CHECKPOINT_ERROR = errors.CHECKPOINT
MANIFEST = "checkpoint.json"
LATEST = "latest"
FORMAT = "nxcc-train-checkpoint/1"

#: Bytes of a `latest` marker and of a manifest read at most.
MARKER_BYTES, MANIFEST_BYTES = 4096, 16 << 20

Arrays = dict[str, np.ndarray]
#: What a shard must hold: array name -> (shape, dtype).
Expected = dict[str, tuple[tuple[int, ...], np.dtype]]


class Shaped(Protocol):
    """An array or an `.npy` header: what `check_arrays` compares."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype: ...


class CheckpointError(CompileError):
    """A checkpoint that cannot be used: `where` (a file) and what is wrong."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(CHECKPOINT_ERROR, f"{where}: {what}", value=where)


def params_name(tp: int, pp: int) -> str:
    return f"params_tp{tp}_pp{pp}.npz"


def optim_name(dp: int, tp: int, pp: int) -> str:
    return f"optim_dp{dp}_tp{tp}_pp{pp}.npz"


def shard_names(tp: int, pp: int, dp: int, zero1: bool) -> list[str]:
    """Every shard file of a checkpoint of layout TP x PP x DP: the parameters once per
    (TP, PP) rank, the optimizer state once per DP rank with ZeRO-1 (over DP > 1), else
    once."""
    names = [params_name(t, p) for p in range(pp) for t in range(tp)]
    dps = range(dp) if zero1 and dp > 1 else range(1)
    return names + [optim_name(d, t, p) for p in range(pp) for t in range(tp) for d in dps]


def checkpoints_root(exp_dir: str) -> str:
    return os.path.join(exp_dir, "checkpoints")


def step_dir(exp_dir: str, step: int) -> str:
    return os.path.join(checkpoints_root(exp_dir), f"step_{step}")


def _write(path: str, data: bytes) -> None:
    with atomic_file(path) as out:
        out.write(data)


def write_shard(exp_dir: str, step: int, name: str, arrays: Arrays) -> str:
    """Write one shard file of step `step`'s checkpoint (atomically); its path.
    CheckpointError when the step's folder already holds a committed checkpoint."""
    folder = step_dir(exp_dir, step)
    if os.path.lexists(os.path.join(folder, MANIFEST)):
        raise CheckpointError(folder, "holds a committed checkpoint; nxcc never writes over one")
    os.makedirs(folder, exist_ok=True)
    buffer = io.BytesIO()
    write_npz(buffer, arrays)
    path = os.path.join(folder, name)
    _write(path, buffer.getvalue())
    return path


def _digest(path: str) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def commit(exp_dir: str, step: int, names: list[str], layout: dict[str, object],
           data_position: dict[str, int] | None = None,
           extra: dict[str, object] | None = None) -> str:
    """Write the manifest of step `step` over the shard files `names` (already written),
    then point `latest` at it; the checkpoint's folder."""
    folder = step_dir(exp_dir, step)
    files = {}
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise CheckpointError(path, "missing: every shard is written before the commit")
        size, sha = _digest(path)
        files[name] = {"bytes": size, "sha256": sha}
    manifest = {"format": FORMAT, "step": step, "layout": dict(layout),
                "data": dict(data_position or {}), "files": files, **(extra or {})}
    _write(os.path.join(folder, MANIFEST), json.dumps(manifest, indent=1).encode())
    _write(os.path.join(checkpoints_root(exp_dir), LATEST), f"step_{step}\n".encode())
    return folder


def write_checkpoint(exp_dir: str, step: int, params: dict[tuple[int, int], Arrays],
                     optim: dict[tuple[int, int, int], Arrays], layout: dict[str, object],
                     data_position: dict[str, int] | None = None) -> str:
    """A whole checkpoint from one process: `params` by (tp, pp), `optim` by (dp, tp, pp)."""
    names = [os.path.basename(write_shard(exp_dir, step, params_name(t, p), arrays))
             for (t, p), arrays in sorted(params.items())]
    names += [os.path.basename(write_shard(exp_dir, step, optim_name(d, t, p), arrays))
              for (d, t, p), arrays in sorted(optim.items())]
    return commit(exp_dir, step, names, layout, data_position)


@dataclass(frozen=True)
class Checkpoint:
    """A committed checkpoint: its folder and manifest."""

    path: str
    step: int
    layout: dict[str, object]
    data: dict[str, int]
    files: dict[str, dict[str, object]]

    def read(self, name: str, expected: Expected | None = None) -> Arrays:
        """The arrays of shard `name`, after checking its size and SHA-256 and, with
        `expected`, every array's name, shape and dtype against it (no array missing, none
        extra) before any array is read."""
        path = os.path.join(self.path, name)
        entry = self.files.get(name)
        if entry is None:
            raise CheckpointError(path, f"is not part of the checkpoint of step {self.step}")
        if not os.path.isfile(path):
            raise CheckpointError(path, "is missing")
        size, sha = _digest(path)
        if size != entry["bytes"]:
            raise CheckpointError(path, f"is truncated or padded ({size} bytes, the "
                                        f"manifest says {entry['bytes']})")
        if sha != entry["sha256"]:
            raise CheckpointError(path, "is corrupt (its SHA-256 differs from the manifest's)")
        try:
            with NpzArchive(path, max_bytes=None) as archive:
                if expected is not None:
                    check_arrays(path, archive.headers, expected)
                return dict(archive.arrays())
        except UserFileError as exc:
            raise CheckpointError(exc.where, f"cannot be read as .npz: {exc.what}") from None

    def params(self, tp: int, pp: int) -> Arrays:
        return self.read(params_name(tp, pp))

    def optim(self, dp: int, tp: int, pp: int) -> Arrays:
        return self.read(optim_name(dp, tp, pp))


def check_arrays(path: str, headers: Mapping[str, Shaped], expected: Expected) -> None:
    """CheckpointError naming the first array of shard `path` that `expected` (name ->
    (shape, dtype)) lacks, or that is missing, or whose shape or dtype differs; `headers`
    are the shard's `.npy` headers (or arrays)."""
    for name, (shape, dtype) in expected.items():
        header = headers.get(name)
        want = f"{np.dtype(dtype).name}{list(shape)}"
        if header is None:
            raise CheckpointError(path, f"lacks '{name}' ({want}), which this model and "
                                        "layout keep")
        have = header.dtype if header.dtype.isnative else header.dtype.newbyteorder("=")
        got = f"{have.name}{list(header.shape)}"
        if header.shape != tuple(shape) or have != np.dtype(dtype):  # read in native order
            raise CheckpointError(path, f"holds '{name}' as {got}; this model and layout "
                                        f"keep {want}")
    extra = sorted(set(headers) - set(expected))
    if extra:
        raise CheckpointError(path, f"holds '{extra[0]}', which is not an array of this "
                                    "model and layout")


def step_folders(exp_dir: str) -> list[tuple[int, str]]:
    """(step, folder) of every committed checkpoint folder (one holding a manifest) under
    `exp_dir/checkpoints`, by step."""
    root = checkpoints_root(exp_dir)
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        step = name[len("step_"):]
        folder = os.path.join(root, name)
        if name.startswith("step_") and step.isdigit() and os.path.isdir(folder) \
                and os.path.lexists(os.path.join(folder, MANIFEST)):
            found.append((int(step), folder))
    return sorted(found)


def _no_pointer(exp_dir: str, why: str) -> CheckpointError:
    """The refusal of a run that finds checkpoints but no valid `latest` (`why`)."""
    found = step_folders(exp_dir)
    steps = ", ".join(os.path.basename(f) for _, f in found[-4:])
    more = f"{len(found) - 4} more and " if len(found) > 4 else ""
    return CheckpointError(
        os.path.join(checkpoints_root(exp_dir), LATEST),
        f"{why}, yet {checkpoints_root(exp_dir)} holds {more}{steps}: resume from one with "
        f"++exp_manager.resume_from_checkpoint={found[-1][1]}, or start afresh in another "
        "exp_manager.exp_dir (nxcc never writes over a step folder)")


def find_latest(exp_dir: str) -> Checkpoint | None:
    """The checkpoint `latest` names (None when there is none, and no step folder either);
    CheckpointError when the marker or the manifest is unreadable or inconsistent, or when
    step folders exist without a marker naming one."""
    marker = os.path.join(checkpoints_root(exp_dir), LATEST)
    if not os.path.lexists(marker):
        if step_folders(exp_dir):
            raise _no_pointer(exp_dir, "is missing")
        return None
    try:
        name = read_regular(marker, MARKER_BYTES, "checkpoint pointer").decode("utf-8").strip()
    except UserFileError as exc:
        raise CheckpointError(marker, exc.what) from None
    except UnicodeDecodeError:
        raise CheckpointError(marker, "is not UTF-8 text") from None
    if not name.startswith("step_") or not name[5:].isdigit():
        if step_folders(exp_dir):
            raise _no_pointer(exp_dir, f"names {name[:60]!r}, not a step_N folder")
        raise CheckpointError(marker, f"names {name[:60]!r}, not a step_N folder")
    folder = os.path.join(checkpoints_root(exp_dir), name)
    if not os.path.lexists(os.path.join(folder, MANIFEST)):
        if step_folders(exp_dir):
            raise _no_pointer(exp_dir, f"names {name}, which holds no checkpoint")
        raise CheckpointError(marker, f"names {name}, which holds no checkpoint")
    return load_manifest(folder)


def load_manifest(folder: str) -> Checkpoint:
    """The checkpoint in `folder`, from its manifest (read with its size and nesting
    bounded; files checked when read)."""
    path = os.path.join(folder, MANIFEST)
    try:
        manifest = load_json_file(path, MANIFEST_BYTES)
    except UserFileError as exc:
        raise CheckpointError(path, exc.what) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(path, f"is not an nxcc checkpoint manifest ({FORMAT})")
    step = manifest.get("step")
    if not _is_int(step) or os.path.basename(folder) != f"step_{step}":
        raise CheckpointError(path, f"step {step!r} does not match its folder")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
            isinstance(e, dict) and _is_int(e.get("bytes")) and e["bytes"] >= 0
            and isinstance(e.get("sha256"), str) for e in files.values()):
        raise CheckpointError(path, "lists its files without sizes and checksums")
    unsafe = [n for n in files if os.path.basename(n) != n or n in ("", ".", "..")]
    if unsafe:
        raise CheckpointError(path, f"lists {unsafe[0]!r}, not a file of its folder")
    layout, data = manifest.get("layout") or {}, manifest.get("data") or {}
    if not isinstance(layout, dict) or not isinstance(data, dict):
        raise CheckpointError(path, "has a layout or data position that is not an object")
    return Checkpoint(folder, step, dict(layout), dict(data), files)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
