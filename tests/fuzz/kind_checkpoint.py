"""Checkpoint folders (`exp_dir/checkpoints`): a mutant is the whole folder as a zip of its
files. Seeds are the checkpoints of two-step runs of the ONNX language model of
examples/train, one written by one rank (the layout the commands resume with) and one by
two ranks with ZeRO-1 (resumed through resharding). Mutants delete or rewrite the `latest`
pointer (the lost-pointer case), change a manifest as JSON, change a shard's arrays as a
careless tool would (retyped, reshaped, swapped, extra, missing; `kind_state`) or as a
hostile writer would (`npz_hazards`), mostly re-hashing it in the manifest so the array
checks are reached, delete, add or rename files and folders, or flip bytes. Each mutant is
unpacked as the experiment's checkpoints, and a run to step 3 resumes from it.

Besides ending cleanly (`check`): no file of a committed step folder may change or
disappear; a run that succeeds while committed step folders exist must have resumed from a
valid `latest`; and what it resumed from must hold exactly the arrays of the seed's layout.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path, PurePosixPath

from hypothesis import strategies as st

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.npz import NpzArchive
from tests.backend.neff.mutants import EXAMPLES
from tests.fuzz.harness import Kind
from tests.fuzz.kind_data import CONFIG, write_config
from tests.fuzz.kind_state import _state_change
from tests.fuzz.mutations import mutate_bytes, mutate_json, zip_members, zip_of
from tests.fuzz.npz_hazards import npy_hazard, zip_hazard
from tests.inprocess import run_cli

ROOT = "checkpoints"
SAME_LAYOUT = ("params_tp0_pp0.npz", "optim_dp0_tp0_pp0.npz")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(PurePosixPath(p.relative_to(folder.parent))): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def seeds(work: Path) -> list[bytes]:
    """Two-step runs by one rank and by two (ZeRO-1); the specs (name -> shape, dtype) of
    the one-rank shards kept in `specs.json` for `check`."""
    shutil.copytree(EXAMPLES / "train" / "data", work / "data", dirs_exist_ok=True)
    out = []
    for devices in (1, 2):
        seed = work / f"seed{devices}"
        shutil.rmtree(seed, ignore_errors=True)
        seed.mkdir()
        config = write_config(seed, steps=2, checkpoints=True)
        result = run_cli("train", str(config), "--quiet", f"trainer.devices={devices}",
                         f"++distributed_strategy.zero1={devices > 1}",
                         f"++data.train_dir={work / 'data'}")
        if result.status != 0:
            raise RuntimeError(f"fuzz seed: training failed: {result.stderr}")
        out.append(zip_of(_tree(seed / "exp" / ROOT)))
    step = work / "seed1" / "exp" / ROOT / "step_2"
    specs = {name: _specs(step / name) for name in SAME_LAYOUT}
    (work / "specs.json").write_text(json.dumps(specs))
    write_config(work, steps=3, checkpoints=True)
    return out


def _specs(path: Path) -> dict[str, list] | None:
    try:
        with NpzArchive(str(path), max_bytes=None) as archive:
            return {k: [list(h.shape), h.native_dtype.str] for k, h in archive.headers.items()}
    except UserFileError:
        return None


def _rehash(members: dict[str, bytes], shard: str) -> None:
    """Record shard's size and SHA-256 in its folder's manifest (as a tool that "fixes"
    the checkpoint would)."""
    manifest = str(PurePosixPath(shard).parent / "checkpoint.json")
    try:
        tree = json.loads(members[manifest])
        body = members[shard]
        tree["files"][PurePosixPath(shard).name] = {
            "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        members[manifest] = json.dumps(tree).encode()
    except (KeyError, ValueError, TypeError, AttributeError):
        pass  # the manifest is already broken: the shard stays as it is


def _shard(members: dict[str, bytes], name: str, data: st.DataObject) -> None:
    what = data.draw(st.sampled_from(("arrays", "arrays", "npy", "zip", "bytes")))
    raw = members[name]
    if what == "arrays":
        inner = zip_members(raw)
        if inner:
            try:
                members[name] = zip_of(_state_change(inner, data))
            except (ValueError, OSError, EOFError):
                members[name] = mutate_bytes(raw, data)
    elif what == "npy":
        inner = zip_members(raw)
        if inner:
            key = data.draw(st.sampled_from(sorted(inner)))
            inner[key] = npy_hazard(inner[key], data)
            members[name] = zip_of(inner)
    elif what == "zip":
        members[name] = zip_hazard(raw, data)
    else:
        members[name] = mutate_bytes(raw, data)
    if data.draw(st.integers(0, 3)):
        _rehash(members, name)


def _files(members: dict[str, bytes], data: st.DataObject) -> None:
    names = sorted(members)
    name = data.draw(st.sampled_from(names))
    what = data.draw(st.sampled_from(("delete", "extra", "rename", "leftover", "copy")))
    if what == "delete":
        del members[name]
    elif what == "extra":
        members[str(PurePosixPath(name).parent / "params_tp1_pp0.npz")] = members[name]
    elif what == "rename":  # a whole step folder under another step's name
        step = PurePosixPath(name).parent.name
        other = data.draw(st.sampled_from(("step_1", "step_3", "step_7", "step_x")))
        for n in [n for n in names if PurePosixPath(n).parent.name == step]:
            members[n.replace(f"/{step}/", f"/{other}/")] = members.pop(n)
    elif what == "leftover":  # what an interrupted save of step 3 leaves
        members[f"{ROOT}/step_3/params_tp0_pp0.npz"] = members[name][: len(members[name]) // 2]
    else:
        members[data.draw(st.sampled_from(names))] = members[name]


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    members = zip_members(raw)
    if not members:
        return mutate_bytes(raw, data)
    how = data.draw(st.sampled_from(("pointer", "manifest", "shard", "shard", "files",
                                     "bytes")), label="how")
    latest = f"{ROOT}/latest"
    if how == "pointer":
        value = data.draw(st.sampled_from((None, b"", b"step_1\n", b"step_9\n", b"garbage",
                                           b"step_-1", b"../step_2", b"\xff\xfe", b"step_2" * 999)))
        if value is None:
            members.pop(latest, None)
        else:
            members[latest] = value
    elif how == "manifest":
        manifests = [n for n in members if n.endswith("checkpoint.json")]
        if manifests:
            name = data.draw(st.sampled_from(manifests))
            try:
                tree = json.loads(members[name])
                members[name] = json.dumps(mutate_json(tree, data)).encode()
            except (ValueError, RecursionError, TypeError):
                members[name] = mutate_bytes(members[name], data)
    elif how == "shard":
        shards = [n for n in members if n.endswith(".npz")]
        if shards:
            _shard(members, data.draw(st.sampled_from(shards)), data)
    elif how == "files":
        _files(members, data)
    else:
        return mutate_bytes(raw, data)
    return zip_of(members)


def _unpack(path: Path, work: Path) -> None:
    exp = work / "exp"
    shutil.rmtree(exp, ignore_errors=True)
    (exp / ROOT).mkdir(parents=True)
    members = zip_members(path.read_bytes()) or {}
    for name, body in members.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or rel.parts[0] != ROOT \
                or name.endswith("/"):
            continue
        target = exp.joinpath(*rel.parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        except OSError:  # a file where a folder is needed: left out
            continue


def _committed(exp: Path) -> dict[str, str]:
    """sha256 of every file of every committed step folder (holding a manifest)."""
    out = {}
    for folder in sorted((exp / ROOT).glob("step_*")):
        if folder.is_dir() and (folder / "checkpoint.json").exists():
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    out[str(p.relative_to(exp))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def commands(path: Path, work: Path) -> list[list[str]]:
    """Unpack the mutant as the experiment's checkpoints (what was there noted in
    `before.json`), then resume to step 3."""
    _unpack(path, work)
    exp = work / "exp"
    latest = exp / ROOT / "latest"
    pointer = latest.read_bytes().decode("utf-8", "replace").strip() \
        if latest.is_file() else None
    (work / "before.json").write_text(json.dumps({"committed": _committed(exp),
                                                  "latest": pointer}))
    return [["train", str(work / CONFIG), "--quiet", f"++data.train_dir={work / 'data'}"]]


def check(work: Path) -> str | None:
    before = json.loads((work / "before.json").read_text())
    exp = work / "exp"
    for rel, sha in before["committed"].items():
        p = exp / rel
        if not p.is_file() or hashlib.sha256(p.read_bytes()).hexdigest() != sha:
            return f"{rel} of a committed step folder was changed or lost"
    latest = exp / ROOT / "latest"
    ran = f"{ROOT}/step_3/checkpoint.json" not in before["committed"] and \
        (exp / ROOT / "step_3" / "checkpoint.json").is_file() and latest.is_file() and \
        latest.read_bytes().strip() == b"step_3"  # this run trained and saved step 3
    if not ran:
        return None
    pointer = before["latest"]
    folders = {PurePosixPath(r).parts[1] for r in before["committed"]}
    if folders and pointer not in folders:
        return f"a run started over while {sorted(folders)} existed (latest: {pointer!r})"
    if pointer is None:
        return None
    step = exp / ROOT / pointer
    expected = json.loads((work / "specs.json").read_text())
    if {p.name for p in step.glob("*.npz")} == set(SAME_LAYOUT):  # the run's own layout
        for name in SAME_LAYOUT:
            if _specs(step / name) != expected[name]:
                return f"resumed from {pointer}/{name}, whose arrays are not the model's"
    return None


KIND = Kind("checkpoint", ".zip", seeds, mutate, commands, check, short_share=0.2)
