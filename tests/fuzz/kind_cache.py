"""Compile cache entries: a mutant is one entry's files (a zip of them, its directory name
in the member `.entry`); the seeds are the entry of a successful compile (examples/mlp.onnx)
and of a remembered failure (an HLO module with an unknown opcode). Mutants change
`meta.json` or `error.json` as JSON (or garble them), the NEFF's bytes, drop, rename or
empty a file, or turn the whole entry into a file. Each mutant is installed as the entry
of its module in a fresh cache; then `compile` of that module, `cache list --json` and
`cache stats` run. Besides ending cleanly, a compile that succeeds must write the module's
own NEFF (`check`): a damaged entry is a miss, never a wrong NEFF."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import strategies as st

from nxcc.driver.cache.store import ERROR, META, NEFF
from nxcc.version import COMPILER_VERSION
from tests.backend.neff.mutants import EXAMPLES
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import mutate_bytes, mutate_json, zip_members, zip_of
from tests.inprocess import run_cli

ENTRY_MEMBER = ".entry"
BAD_HLO = b"""HloModule bad

ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[4] frobnicate(p)
}
"""


def _compile_argv(model: Path, work: Path, cache: Path) -> list[str]:
    framework = ["--framework", "XLA"] if model.suffix == ".hlo" else []
    return ["compile", str(model), *framework, "--target", "trn1", "--output",
            str(work / "out.neff"), "--logfile", str(work / "log.txt"), "--cache-dir",
            str(cache)]


def _entries(work: Path) -> dict[str, str]:
    return json.loads((work / "entries.json").read_text())


def seeds(work: Path) -> list[bytes]:
    """Compile mlp (ok) and the bad module (failed) into a seed cache; keep the reference
    NEFF (`reference.neff`) and which model each entry belongs to (`entries.json`)."""
    (work / "bad.hlo").write_bytes(BAD_HLO)
    seed_cache = work / "seed-cache"
    shutil.rmtree(seed_cache, ignore_errors=True)
    entries: dict[str, str] = {}
    out = []
    for model in (EXAMPLES / "mlp.onnx", work / "bad.hlo"):
        run_cli(*_compile_argv(model, work, seed_cache))
        version_dir = seed_cache / f"neuronxcc-{COMPILER_VERSION}"
        for entry in sorted(version_dir.iterdir()):
            if entry.is_dir() and entry.name not in entries:
                entries[entry.name] = str(model)
                out.append(zip_of({ENTRY_MEMBER: entry.name.encode(),
                                 **{f.name: f.read_bytes() for f in entry.iterdir()}}))
    if len(out) != 2:
        raise RuntimeError(f"fuzz seed: expected two cache entries, found {sorted(entries)}")
    shutil.copyfile(seed_cache / f"neuronxcc-{COMPILER_VERSION}" /
                    next(n for n, m in entries.items() if m.endswith(".onnx")) / NEFF,
                    work / "reference.neff")
    (work / "entries.json").write_text(json.dumps(entries))
    return out






def _json_change(text: bytes, data: st.DataObject) -> bytes:
    try:
        tree = json.loads(text)
    except ValueError:
        return mutate_bytes(text, data)
    return json.dumps(mutate_json(tree, data)).encode()


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    members = zip_members(raw)
    how = data.draw(st.sampled_from(("meta", "meta", "error", "neff", "file", "bytes")),
                    label="how")
    if members is None or how == "bytes":
        return mutate_bytes(raw, data)
    files = sorted(n for n in members if n != ENTRY_MEMBER) or [META]
    if how in ("meta", "error"):
        name = META if how == "meta" else ERROR
        members[name] = _json_change(members.get(name, b"{}"), data)
    elif how == "neff":
        members[NEFF] = mutate_bytes(members.get(NEFF, b""), data)
    else:
        name = data.draw(st.sampled_from(files))
        action = data.draw(st.sampled_from(("drop", "empty", "rename", "garbage")))
        if action == "drop":
            members.pop(name, None)
        elif action == "empty":
            members[name] = b""
        elif action == "rename":
            members[data.draw(st.sampled_from((META, NEFF, ERROR, "other")))] = \
                members.pop(name, b"")
        else:
            members[name] = data.draw(st.binary(max_size=64))
    return zip_of(members)


def _install(raw: bytes, work: Path, cache: Path) -> Path:
    """Put the mutant in a fresh cache as its module's entry; the module's path."""
    entries = _entries(work)
    members = zip_members(raw)
    name = (members or {}).get(ENTRY_MEMBER, b"").decode("utf-8", "replace")
    if name not in entries:
        name = next(iter(entries))
    shutil.rmtree(cache, ignore_errors=True)
    target = cache / f"neuronxcc-{COMPILER_VERSION}" / name
    target.parent.mkdir(parents=True)
    if members is None:  # not a zip: the entry is a file of these bytes
        target.write_bytes(raw)
    else:
        target.mkdir()
        for member, data in members.items():
            if member != ENTRY_MEMBER and "/" not in member and member not in ("", ".", ".."):
                (target / member).write_bytes(data)
    return Path(entries[name])


def commands(path: Path, work: Path) -> list[list[str]]:
    """Install the mutant, then compile its module through the cache, list and stats."""
    cache = work / "cache"
    (work / "out.neff").unlink(missing_ok=True)
    model = _install(path.read_bytes(), work, cache)
    return [_compile_argv(model, work, cache),
            ["cache", "list", "--json", "--cache-dir", str(cache)],
            ["cache", "stats", "--cache-dir", str(cache)]]


def check(work: Path) -> str | None:
    """A NEFF written by the compile is the module's own."""
    out = work / "out.neff"
    if out.exists() and out.read_bytes() != (work / "reference.neff").read_bytes():
        return "the compile wrote a NEFF that is not the module's"
    return None


KIND = Kind("cache", ".zip", seeds, mutate, commands, check)
