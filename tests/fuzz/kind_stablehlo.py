"""StableHLO text inputs (JAX's default `lower(...).as_text()`): seeds from
tests/compiler/stablehlo/fixtures/ (pretty, generic and located forms); mutants change numbers
(dims, constants, result counts `%0:4`, `#N` indices), element types, tensor types (nested
tuples, absurd ranks), SSA names (so one dangles or is defined twice), callee names (so a
function calls itself), `dense<...>` literals, brackets, whole lines or the bytes, or make
what MLIR's verifier rejects (a value defined again, a second or early return, a functional
type or signature that contradicts the values); each goes through `compile`. A compile that
succeeds must write a NEFF whose inputs and outputs are the entry function's declared
types (`check`): a signature the body contradicts is never accepted."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st

from nxcc.backend.neff import read_neff
from nxcc.compiler.hlo.dtypes import ir_dtype
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.compiler.stablehlo.parser import parse_mlir
from tests.backend.neff.mutants import REPO
from tests.fuzz.harness import Kind
from tests.fuzz.kind_hlo import _pick, _splice
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, mutate_lines

FIXTURES = REPO / "tests/compiler/stablehlo/fixtures"
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


DEFINITION = re.compile(rb"^(\s*)(%[\w.$-]+(?::\d+)?)( = )", re.M)
RETURN = re.compile(rb"^\s*(?:func\.)?return\b[^\n]*$|^\s*stablehlo\.return\b[^\n]*$", re.M)
FUNCTIONAL = re.compile(rb"\) -> (?:\()?tensor<[^<>]*>")
SIGNATURE = re.compile(rb"^\s*func\.func[^\n]*->\s*\(?([^{\n]*)", re.M)


def _verifier(raw: bytes, data: st.DataObject) -> bytes:
    """What MLIR's verifier rejects: a value defined again, a second or early return, a
    type annotation or a signature that contradicts the values."""
    what = data.draw(st.sampled_from(("redefine", "return", "annotation", "signature")))
    types = sorted({m.group() for m in TENSOR.finditer(raw)}) or [b"tensor<f32>"]
    if what == "redefine":
        names = sorted({m.group(2).split(b":")[0] for m in DEFINITION.finditer(raw)})
        m = _pick(DEFINITION, raw, data)
        if m is None or not names:
            return raw
        return raw[:m.start(2)] + data.draw(st.sampled_from(names)) + raw[m.end(2):]
    if what == "return":
        m = _pick(RETURN, raw, data)
        if m is None:
            return raw
        line = m.group() + b"\n"
        spot = data.draw(st.sampled_from(("after", "before")))
        at = m.end() + 1 if spot == "after" else raw.rfind(b"\n", 0, m.start()) + 1
        return raw[:at] + line + raw[at:]
    pattern = TENSOR if what == "annotation" else SIGNATURE
    m = _pick(pattern, raw, data)
    if m is None:
        return raw
    if what == "signature":
        inner = _pick(TENSOR, m.group(), data)
        if inner is None:
            return raw
        start = m.start() + inner.start()
        return raw[:start] + data.draw(st.sampled_from(types)) + raw[m.start() + inner.end():]
    return _splice(raw, m, data.draw(st.sampled_from(types)))


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("number", "etype", "tensor", "ssa", "callee", "dense",
                                     "bracket", "line", "verifier", "verifier", "bytes")),
                    label="how")
    if how == "verifier":
        return _verifier(raw, data)
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
    (work / "out.neff").unlink(missing_ok=True)
    return [["compile", str(path), "--framework", "XLA", "--target", "trn1", "--output",
             str(work / "out.neff"), "--logfile", str(work / "log.txt"), "--no-cache"]]


def _declared(text: str) -> tuple[list, list] | None:
    """(input, output) (dtype, shape) pairs the entry function declares (None when the
    text does not parse, or declares tuples or tokens, which the NEFF flattens)."""
    try:
        mod = parse_mlir(text, "<fuzz>")
    except HloError:
        return None
    funcs = {f.name: f for f in mod.funcs}
    entry = funcs.get("main") or next((f for f in mod.funcs if f.visibility == "public"),
                                      mod.funcs[0])
    shapes = [t for _, t, _ in entry.args] + [t for t, _ in entry.results]
    if any(not isinstance(t, ArrayShape) or t.dtype == "token" for t in shapes):
        return None
    pairs = [(t.dtype, list(t.dims)) for t in shapes]
    return pairs[:len(entry.args)], pairs[len(entry.args):]


def check(work: Path) -> str | None:
    """A NEFF written from the case must declare the entry function's own types."""
    neff = work / "out.neff"
    if not neff.exists():
        return None
    declared = _declared((work / "case.mlir").read_text(encoding="utf-8", errors="replace"))
    if declared is None:
        return None
    manifest = read_neff(neff).manifest
    spmd = manifest.get("spmd") or {}  # an SPMD program's global shapes are its spmd section's
    found = tuple([(e["dtype"], g["shape"]) for e, g in zip(
        manifest[side], spmd.get(side) or manifest[side], strict=True)]
        for side in ("inputs", "outputs"))
    if [[(_ir(d), s) for d, s in side] for side in declared] != list(found):
        return f"compiled a NEFF of {found}, but the entry function declares {declared}"
    return None


def _ir(hlo: str) -> str:
    dtype = ir_dtype(hlo)
    return dtype.value if dtype is not None else hlo


KIND = Kind("stablehlo", ".mlir", seeds, mutate, commands, check)
