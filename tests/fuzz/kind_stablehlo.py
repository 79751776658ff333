"""StableHLO text inputs (JAX's default `lower(...).as_text()`): seeds from
tests/stablehlo/fixtures/ (pretty, generic and located forms); mutants change numbers
(dims, constants, result counts `%0:4`, `#N` indices), element types, tensor types (nested
tuples, absurd ranks), SSA names (so one dangles or is defined twice), callee names (so a
function calls itself), `dense<...>` literals, brackets, whole lines or the bytes; each goes
through `compile`."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st

from tests.fuzz.harness import Kind
from tests.fuzz.kind_hlo import _pick, _splice
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, mutate_lines
from tests.neff.mutants import REPO

FIXTURES = REPO / "tests" / "stablehlo" / "fixtures"
NUMBER = re.compile(rb"-?\b\d+\b")
ETYPE = re.compile(rb"\b(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|ui8|ui32|ui64)\b")
TENSOR = re.compile(rb"tensor<[^<>]*>")
SSA = re.compile(rb"%[\w.$-]+")
CALLEE = re.compile(rb"@[\w.$-]+")
FUNC = re.compile(rb"func\.func (?:public |private )?(@[\w.$-]+)")
DENSE = re.compile(rb"dense<[^>]*>")
BRACKET = re.compile(rb"[{}()<>\[\]]")


def seeds(work: Path) -> list[bytes]:
    """The fixtures under 12 KB."""
    return [p.read_bytes() for p in sorted(FIXTURES.glob("*.mlir"))
            if p.stat().st_size < 12_000]




def _tensor(raw: bytes, data: st.DataObject) -> bytes:
    m = _pick(TENSOR, raw, data)
    if m is None:
        return raw
    shape = data.draw(st.sampled_from(("tuple", "rank", "dyn", "bad")))
    if shape == "tuple":
        depth = data.draw(st.integers(1, 3000))
        new = b"tuple<" * depth + m.group() + b">" * depth
    elif shape == "rank":
        new = b"tensor<" + b"2x" * data.draw(st.integers(1, 200)) + b"f32>"
    elif shape == "dyn":
        new = b"tensor<?x4xf32>"
    else:
        new = data.draw(st.sampled_from((b"tensor<>", b"tensor<4xx>", b"tensor<f77>",
                                         b"tensor<4294967296x4294967296xf32>",
                                         b"tensor<-1xf32>", b"tensor<4xcomplex<f32>>")))
    return _splice(raw, m, new)


def _rename(raw: bytes, pattern: re.Pattern[bytes], names: list[bytes],
            data: st.DataObject) -> bytes:
    m = _pick(pattern, raw, data)
    return _splice(raw, m, data.draw(st.sampled_from(names))) if m else raw


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("number", "etype", "tensor", "ssa", "callee", "dense",
                                     "bracket", "line", "bytes")), label="how")
    if how == "number":
        value = data.draw(st.sampled_from(BOUNDARY_INTS + (-5, 3, 16)))
        return _splice(raw, _pick(NUMBER, raw, data), str(value).encode())
    if how == "etype":
        name = data.draw(st.sampled_from((b"f32", b"i1", b"bf16", b"i4", b"f8E4M3FN",
                                          b"f77", b"ui128", b"index", b"complex")))
        return _splice(raw, _pick(ETYPE, raw, data), name)
    if how == "tensor":
        return _tensor(raw, data)
    if how == "ssa":
        names = sorted({m.group() for m in SSA.finditer(raw)}) + [b"%nowhere", b"%"]
        return _rename(raw, SSA, names, data)
    if how == "callee":
        names = [m.group(1) for m in FUNC.finditer(raw)] + [b"@nowhere"]
        return _rename(raw, CALLEE, names, data)
    if how == "dense":
        body = data.draw(st.sampled_from((b"dense<>", b"dense<[1.0, 2.0]>", b"dense<0x00>",
                                          b"dense<" + b"[" * 500 + b"1" + b"]" * 500 + b">",
                                          b"dense<\"0xZZ\">", b"dense<nan>", b"dense<1e400>")))
        return _splice(raw, _pick(DENSE, raw, data), body)
    if how == "bracket":
        return _splice(raw, _pick(BRACKET, raw, data), b"")
    if how == "line":
        return mutate_lines(raw, data)
    return mutate_bytes(raw, data)


def commands(path: Path, work: Path) -> list[list[str]]:
    return [["compile", str(path), "--framework", "XLA", "--target", "trn1", "--output",
             str(work / "out.neff"), "--logfile", str(work / "log.txt"), "--no-cache"]]


KIND = Kind("stablehlo", ".mlir", seeds, mutate, commands)
