"""HLO text inputs: seeds from tests/compiler/hlo/fixtures/ (JAX dumps, both styles); mutants change
numbers (dimensions, constants, indices), element types, shapes (nested tuples), the
computations an instruction calls (so one calls itself), whole lines, or the bytes; each
goes through `compile`."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st

from tests.backend.neff.mutants import REPO
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import BOUNDARY_INTS, DTYPE_NAMES, mutate_bytes, mutate_lines

FIXTURES = REPO / "tests/compiler/hlo/fixtures"
NUMBER = re.compile(rb"-?\b\d+\b")
DTYPE = re.compile(rb"\b(?:f16|bf16|f32|f64|s8|s16|s32|s64|u8|u32|pred)\b")
SHAPE = re.compile(rb"\b[a-z0-9]+\[[0-9,]*\](?:\{[0-9,]*\})?")
CALL = re.compile(rb"\b(to_apply|calls|body|condition|branch_computations)=\{?%?[\w.]+")
COMPUTATION = re.compile(rb"^(?:ENTRY )?%?([\w.]+)[^\n]*\{\s*$", re.M)


def seeds(work: Path) -> list[bytes]:
    """The fixtures under 40 KB (all of them but the largest dumps)."""
    return [p.read_bytes() for p in sorted(FIXTURES.glob("*.hlo")) if p.stat().st_size < 40_000]


def _pick(pattern: re.Pattern[bytes], text: bytes, data: st.DataObject) -> re.Match | None:
    found = list(pattern.finditer(text))
    return found[data.draw(st.integers(0, len(found) - 1))] if found else None


def _splice(text: bytes, m: re.Match | None, new: bytes) -> bytes:
    return text if m is None else text[:m.start()] + new + text[m.end():]


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("number", "dtype", "tuple", "call", "line", "literal",
                                     "bytes")), label="how")
    if how == "number":
        value = data.draw(st.sampled_from(BOUNDARY_INTS + (-5, 3, 16)))
        return _splice(raw, _pick(NUMBER, raw, data), str(value).encode())
    if how == "dtype":
        name = data.draw(st.sampled_from(DTYPE_NAMES + ("f77", "u128", "token", "c64")))
        return _splice(raw, _pick(DTYPE, raw, data), name.encode())
    if how == "tuple":
        m = _pick(SHAPE, raw, data)
        depth = data.draw(st.integers(1, 3000))
        return _splice(raw, m, b"(" * depth + (m.group() if m else b"") + b")" * depth)
    if how == "call":
        names = [m.group(1) for m in COMPUTATION.finditer(raw)] or [b"main"]
        target = data.draw(st.sampled_from(names))
        m = _pick(CALL, raw, data)
        return _splice(raw, m, m.group(1) + b"=" + target if m else b"")
    if how == "line":
        return mutate_lines(raw, data)
    if how == "literal":
        dims = data.draw(st.sampled_from((b"1048576,1048576", b"4294967296", b"3,3",
                                          b"0", b"-1")))
        body = data.draw(st.sampled_from((b"0", b"{1,2,3}", b"{" * 500 + b"1" + b"}" * 500)))
        line = b"  big.0 = f32[" + dims + b"] constant(" + body + b")\n"
        at = raw.find(b"ENTRY")
        nl = raw.find(b"\n", at)
        return raw if nl < 0 else raw[:nl + 1] + line + raw[nl + 1:]
    return mutate_bytes(raw, data)


def commands(path: Path, work: Path) -> list[list[str]]:
    return [["compile", str(path), "--framework", "XLA", "--target", "trn1", "--output",
             str(work / "out.neff"), "--logfile", str(work / "log.txt")]]


KIND = Kind("hlo", ".hlo", seeds, mutate, commands)
