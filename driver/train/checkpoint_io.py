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
import zipfile
from dataclasses import dataclass

import numpy as np

from nxcc import errors
from nxcc.backend.neff.atomic import atomic_file
from nxcc.driver.errors import CompileError

CHECKPOINT_ERROR = errors.CHECKPOINT
MANIFEST = "checkpoint.json"
LATEST = "latest"
FORMAT = "nxcc-train-checkpoint/1"

Arrays = dict[str, np.ndarray]


class CheckpointError(CompileError):
    """A checkpoint that cannot be used: `where` (a file) and what is wrong."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(CHECKPOINT_ERROR, f"{where}: {what}", value=where)


def params_name(tp: int, pp: int) -> str:
    return f"params_tp{tp}_pp{pp}.npz"


def optim_name(dp: int, tp: int, pp: int) -> str:
    return f"optim_dp{dp}_tp{tp}_pp{pp}.npz"


def checkpoints_root(exp_dir: str) -> str:
    return os.path.join(exp_dir, "checkpoints")


def step_dir(exp_dir: str, step: int) -> str:
    return os.path.join(checkpoints_root(exp_dir), f"step_{step}")


def _write(path: str, data: bytes) -> None:
    with atomic_file(path) as out:
        out.write(data)


def write_shard(exp_dir: str, step: int, name: str, arrays: Arrays) -> str:
    """Write one shard file of step `step`'s checkpoint (atomically); its path."""
    folder = step_dir(exp_dir, step)
    os.makedirs(folder, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
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

    def read(self, name: str) -> Arrays:
        """The arrays of shard `name`, after checking its size and SHA-256."""
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
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise CheckpointError(path, f"cannot be read as .npz ({exc})") from None

    def params(self, tp: int, pp: int) -> Arrays:
        return self.read(params_name(tp, pp))

    def optim(self, dp: int, tp: int, pp: int) -> Arrays:
        return self.read(optim_name(dp, tp, pp))


def find_latest(exp_dir: str) -> Checkpoint | None:
    """The checkpoint `latest` names (None when there is none); CheckpointError when the
    marker or the manifest is unreadable or inconsistent."""
    marker = os.path.join(checkpoints_root(exp_dir), LATEST)
    if not os.path.exists(marker):
        return None
    try:
        with open(marker, encoding="utf-8") as f:
            name = f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(marker, f"cannot be read ({exc})") from None
    if not name.startswith("step_") or not name[5:].isdigit():
        raise CheckpointError(marker, f"names {name!r}, not a step_N folder")
    return load_manifest(os.path.join(checkpoints_root(exp_dir), name))


def load_manifest(folder: str) -> Checkpoint:
    """The checkpoint in `folder`, from its manifest (files checked when read)."""
    path = os.path.join(folder, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except OSError as exc:
        raise CheckpointError(path, f"cannot be read ({exc.strerror})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(path, f"is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(path, f"is not an nxcc checkpoint manifest ({FORMAT})")
    step = manifest.get("step")
    if not isinstance(step, int) or os.path.basename(folder) != f"step_{step}":
        raise CheckpointError(path, f"step {step!r} does not match its folder")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("bytes"), int)
            and isinstance(e.get("sha256"), str) for e in files.values()):
        raise CheckpointError(path, "lists its files without sizes and checksums")
    return Checkpoint(folder, step, dict(manifest.get("layout") or {}),
                      dict(manifest.get("data") or {}), files)
