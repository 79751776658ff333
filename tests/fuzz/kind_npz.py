"""`run --inputs` files: seeds are examples/*_inputs.npz; mutants change a member's `.npy`
header (shape, dtype, version), drop or add members, rewrite a member or the archive as a
hostile writer would (`npz_hazards`: big-endian, Fortran order, objects, absurd shapes,
encryption, bzip2 bombs, duplicates, trailing data, lying sizes), or flip the bytes; each
runs the example model it belongs to."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st

from tests.backend.neff.mutants import EXAMPLES, compile_example
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, zip_members, zip_of
from tests.fuzz.npz_hazards import npy_hazard, zip_hazard

SHAPE = re.compile(rb"'shape': \(([^)]*)\)")
DESCR = re.compile(rb"'descr': '([^']*)'")


def seeds(work: Path) -> list[bytes]:
    compile_example(work / "mlp.neff", "mlp")
    return [(EXAMPLES / "mlp_inputs.npz").read_bytes(), (EXAMPLES / "cnn_inputs.npz").read_bytes()]


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("shape", "descr", "member", "npy", "zip", "bytes")),
                    label="how")
    if how == "zip":
        return zip_hazard(raw, data)
    members = zip_members(raw)
    if members is None:
        return mutate_bytes(raw, data)
    if how == "bytes" or not members:
        return mutate_bytes(raw, data)
    name = data.draw(st.sampled_from(sorted(members)))
    npy = members[name]
    if how == "npy":
        members[name] = npy_hazard(npy, data)
        return zip_of(members)
    if how == "shape":
        dims = data.draw(st.lists(st.sampled_from(BOUNDARY_INTS[3:] + (4, 16)), max_size=4))
        new = b"(" + b", ".join(str(d).encode() for d in dims) + (b",)" if len(dims) == 1
                                                                  else b")")
        members[name] = SHAPE.sub(b"'shape': " + new, npy, count=1)
    elif how == "descr":
        descr = data.draw(st.sampled_from((b"|O", b"<f8", b"<i4", b"|b1", b"<c16", b"V4",
                                           b"<U3", b"garbage", b"")))
        members[name] = DESCR.sub(b"'descr': '" + descr + b"'", npy, count=1)
    else:
        action = data.draw(st.sampled_from(("drop", "rename", "garbage")))
        if action == "drop":
            del members[name]
        elif action == "rename":
            members["other.npy"] = members.pop(name)
        else:
            members[name] = data.draw(st.binary(max_size=200))
    return zip_of(members)


def commands(path: Path, work: Path) -> list[list[str]]:
    return [["run", str(work / "mlp.neff"), "--inputs", str(path), "-q"]]


KIND = Kind("npz", ".npz", seeds, mutate, commands)
