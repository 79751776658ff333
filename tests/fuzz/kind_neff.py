"""NEFF inputs: seeds compiled from examples/ and the runtime tests' models; mutants change
the manifest or a program as JSON, a weight, a member, or the file's bytes; each mutant
goes through `run` and `inspect-neff`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from nxcc.backend.neff import HEADER_SIZE, NeffError, NeffHeader
from nxcc.backend.neff.constants import MANIFEST_NAME
from nxcc.backend.neff.payload import read_payload
from tests.backend.neff.mutants import compile_example, pack, pack_bytes, unpack
from tests.backend.neff.real_layout import VARIANTS, write_real_neff
from tests.backend.runtime.neffs import spin_neff, weights_neff
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import mutate_bytes, mutate_json


def seeds(work: Path) -> list[bytes]:
    """mlp and cnn from examples/, a `while` loop (spin), a 1 MiB weight, mlp at -lnc 2 on
    trn2 (two programs, a collective); the inputs each one takes are written beside. And the
    NEFFs in AWS's compiler's layout of `tests.backend.neff.real_layout` (inspected, refused by run)."""
    made = [compile_example(work / "mlp.neff", "mlp"), compile_example(work / "cnn.neff", "cnn"),
            spin_neff(work / "spin.neff"), weights_neff(work / "weights.neff")]
    out = []
    for path in made:
        header, members = unpack(path)
        out.append(pack(work / f"seed-{path.name}", header, members).read_bytes())
        _write_inputs(work, json.loads(members[MANIFEST_NAME]))
    for name, spec in VARIANTS.items():
        out.append(write_real_neff(work / f"seed-real-{name}.neff", spec).read_bytes())
    return out


def _write_inputs(work: Path, manifest: dict) -> None:
    """Inputs for a seed's manifest, merged into one npz the commands pass (extra names
    are an error, so one file per input signature, named by the manifest's name)."""
    arrays = {e["name"]: np.ones(e["shape"], _numpy(e["dtype"])) for e in manifest["inputs"]}
    if manifest.get("name") == "spin-trn1-lnc1":
        arrays = {"n": np.array(3, np.int32)}
    np.savez(work / f"inputs-{manifest.get('name')}.npz", **arrays)


def _numpy(dtype: str) -> np.dtype:
    from nxcc.ir.dtypes import DType

    return DType.from_name(dtype).numpy


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    """A change to the manifest, a program, a weight or a member; or to the raw bytes."""
    where = data.draw(st.sampled_from(("manifest", "program", "program", "member", "weight",
                                       "bytes", "header")), label="where")
    if where == "bytes" or len(raw) < HEADER_SIZE:
        return mutate_bytes(raw, data)
    if where == "header" and len(raw) >= HEADER_SIZE:
        buf = bytearray(raw)
        i = data.draw(st.integers(0, HEADER_SIZE - 1))
        buf[i] = data.draw(st.integers(0, 255))
        return bytes(buf)
    try:
        header = NeffHeader.unpack(raw[:HEADER_SIZE], "<fuzz>")
        members = read_payload(raw[HEADER_SIZE:], "<fuzz>")
    except NeffError:
        return mutate_bytes(raw, data)
    names = sorted(members)
    if not names:
        return mutate_bytes(raw, data)
    if where in ("manifest", "program"):
        programs = [n for n in names if n.endswith(".json") and n != MANIFEST_NAME]
        name = MANIFEST_NAME if where == "manifest" or not programs else data.draw(
            st.sampled_from(programs))
        try:
            tree = json.loads(members[name])
        except (KeyError, ValueError, RecursionError):
            return mutate_bytes(raw, data)
        members[name] = json.dumps(mutate_json(tree, data)).encode()
    elif where == "weight":
        weights = [n for n in names if n.endswith(".npy")] or names
        name = data.draw(st.sampled_from(weights))
        members[name] = mutate_bytes(members[name], data)
    else:
        name = data.draw(st.sampled_from(names))
        action = data.draw(st.sampled_from(("drop", "garbage", "copy")))
        if action == "drop":
            del members[name]
        elif action == "garbage":
            members[name] = data.draw(st.binary(max_size=256))
        else:
            members[name] = members[data.draw(st.sampled_from(names))]
    return pack_bytes(header, members)


def commands(path: Path, work: Path) -> list[list[str]]:
    """`run` with the inputs of whichever seed this came from (by its manifest name, when it
    still has one) and `inspect-neff` as JSON."""
    inputs = {p.name: p for p in sorted(work.glob("inputs-*.npz"))}
    try:
        name = json.loads(read_payload(path.read_bytes()[HEADER_SIZE:], "<fuzz>")
                          [MANIFEST_NAME]).get("name")
    except Exception:  # any broken mutant: the first inputs will do
        name = None
    first = next(iter(inputs.values()))
    chosen = inputs.get(f"inputs-{name}.npz", first) if isinstance(name, str) else first
    return [["run", str(path), "--inputs", str(chosen), "-q"],
            ["inspect-neff", str(path), "--json"]]


KIND = Kind("neff", ".neff", seeds, mutate, commands)
