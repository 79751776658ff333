"""Broken HLO is reported as FILE:LINE:COL: expected ..., found ..., then the source line and
a caret under the column, with an NCC error code; the command line exits non-zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.compiler.hlo import HloError, import_hlo
from nxcc.driver.compile import compile_model
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions
from tests.cli_helpers import neuronx_cc

BASE = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  y = f32[2,3]{1,0} parameter(1)
  z = f32[2,3]{1,0} add(x, y)
  zero = f32[] constant(0)
  ROOT r = f32[2] reduce(z, zero), dimensions={1}, to_apply=add
}
"""
Z = "z = f32[2,3]{1,0} add(x, y)"

# (case, old text, new text, line, column, code, message fragment)
CASES = [
    ("header", "HloModule m", "Module m", 1, 1, "NCC_EFRM001",
     "expected 'HloModule' at the start of the module, found 'Module'"),
    ("missing-equals", Z, "z f32[2,3]{1,0} add(x, y)", 12, 5, "NCC_EFRM001",
     "expected '=' after the instruction name 'z', found 'f32'"),
    ("element-type", Z, "z = f33[2,3]{1,0} add(x, y)", 12, 7, "NCC_EFRM001",
     "expected an element type (pred, s8..s64, u8..u64, f16, bf16, f32, f64), found 'f33'"),
    ("operand-comma", "add(x, y)", "add(x y)", 12, 27, "NCC_EFRM001",
     "expected ',' or ')' after operand 'x', found 'y'"),
    ("int-list", "dimensions={1}", "dimensions={1,x}", 14, 50, "NCC_EFRM001",
     "expected an integer in a list of integers like {1,0}, found 'x'"),
    ("unclosed-brace", "dimensions={1}", "dimensions={1", 14, 63, "NCC_EFRM001",
     "expected '}' to close the '{' of this value, found the end of the line"),
    ("attribute-equals", "dimensions={1}", "dimensions {1}", 14, 36, "NCC_EFRM001",
     "expected an attribute name followed by '=', found 'dimensions'"),
    ("direction", Z, "z = pred[2,3]{1,0} compare(x, y), direction=SIDEWAYS", 12, 47,
     "NCC_EFRM001", "expected one of EQ, NE, LT, LE, GT, GE, found 'SIDEWAYS'"),
    ("literal", "constant(0)", "constant(zero)", 13, 25, "NCC_EFRM001",
     "expected a number for f32, found 'zero'"),
    ("literal-count", "zero = f32[] constant(0)", "zero = f32[2] constant({1,2,3})", 13, 31,
     "NCC_EFRM001", "expected '}' after 2 entries of dimension 0, found '3'"),
    ("window", "to_apply=add", "window={size=3x}, to_apply=add", 14, 65, "NCC_EFRM001",
     "expected window size like 3x3, found '3x'"),
    ("slice", Z, "z = f32[2,3]{1,0} slice(x), slice={[0:2] [0:3]}", 12, 44, "NCC_EFRM001",
     "expected ',' or '}' between slice ranges, found '['"),
    ("string", "dimensions={1}", 'dimensions={1}, metadata={op_name="abc}', 14, 70,
     "NCC_EFRM001", "expected '\"' to close the string, found the end of the line"),
    ("trailing", "add(x, y)", "add(x, y) junk", 12, 31, "NCC_EFRM001",
     "expected ',' or the end of the line after the instruction, found 'junk'"),
    ("close-computation", "to_apply=add\n}", "to_apply=add\n", 16, 1, "NCC_EFRM001",
     "expected '}' to close computation 'main', found the end of the text"),
    ("dynamic", "x = f32[2,3]", "x = f32[<=2,3]", 10, 11, "NCC_EMOD025",
     "expected a static dimension size, found a dynamic one"),
    ("layout", "x = f32[2,3]{1,0}", "x = f32[2,3]{1,1}", 10, 15, "NCC_EFRM002",
     "expected a layout that permutes the 2 dimensions, found {1,1}"),
    ("undefined-operand", "add(x, y)", "add(x, w)", 12, 28, "NCC_EFRM002",
     "expected an instruction of computation 'main', found 'w', which it does not define"),
    ("shape-mismatch", Z, "z = f32[3,2]{1,0} add(x, y)", 12, 3, "NCC_EFRM002",
     "expected add 'z' to have the shape its operands and attributes give (f32[2,3]), "
     "found f32[3,2]"),
    ("unknown-computation", "to_apply=add", "to_apply=nope", 14, 61, "NCC_EFRM002",
     "expected a computation of the module for 'to_apply', found 'nope'"),
    ("two-entries", "add {", "ENTRY add {", 9, 1, "NCC_EFRM002",
     "expected one ENTRY computation, found a second one ('main')"),
    ("parameter-number", "parameter(1)\n  z", "parameter(0)\n  z", 11, 21, "NCC_EFRM002",
     "expected each parameter number once, found parameter(0) again"),
    ("elided", "constant(0)", "constant({...})", 13, 25, "NCC_EFRM002",
     "expected the constant's values, found them elided as {...}"),
    ("opcode", "add(x, y)", "frobnicate(x, y)", 12, 21, "NCC_EUOC002",
     "expected an opcode the compiler supports, found 'frobnicate'"),
    ("custom-call", Z, 'z = f32[2,3]{1,0} custom-call(x), custom_call_target="my_kernel"',
     12, 56, "NCC_EHCA005",
     "expected a custom-call target the compiler knows, found 'my_kernel'"),
    ("dtype", "x = f32[2,3]", "x = c64[2,3]", 10, 3, "NCC_EDTY001",
     "expected a supported element type"),
]


def broken(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


@pytest.mark.parametrize(("case", "old", "new", "line", "col", "code", "message"), CASES,
                         ids=[c[0] for c in CASES])
def test_error_message_and_position(case: str, old: str, new: str, line: int, col: int,
                                    code: str, message: str) -> None:
    text = broken(old, new)
    with pytest.raises(HloError) as info:
        import_hlo(text, "t.hlo")
    exc = info.value
    assert (exc.line, exc.column, exc.code) == (line, col, code), str(exc)
    head, snippet, caret = str(exc).split("\n")
    assert head.startswith(f"t.hlo:{line}:{col}: "), head
    assert message in head, head
    assert snippet == "  " + text.splitlines()[line - 1] if line <= len(text.splitlines()) \
        else snippet.strip() == ""
    assert caret == "  " + " " * (col - 1) + "^"


def test_compile_model_keeps_the_code_and_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(broken("add(x, y)", "add(x y)"))
    with pytest.raises(CompileError) as info:
        compile_model(str(path), CompileOptions(target="trn1", output=str(tmp_path / "o.neff")))
    assert info.value.code == "NCC_EFRM001"
    assert f"{path}:12:27: expected ',' or ')' after operand 'x', found 'y'" in str(info.value)
    assert not (tmp_path / "o.neff").exists()


def test_command_line_exits_non_zero(tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(broken("dimensions={1}", "dimensions={1,x}"))
    r = neuronx_cc("compile", str(path), "--target", "trn1", "--output",
                   str(tmp_path / "o.neff"), "--logfile", str(tmp_path / "log.txt"))
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "NCC_EFRM001" in r.stderr and "bad.hlo:14:50: expected an integer" in r.stderr


@pytest.mark.parametrize("case", ["operand-comma", "header", "int-list", "missing-equals"])
def test_lark_engine_reports_syntax_errors_with_position(case: str) -> None:
    _, old, new, line, _col, _code, _ = next(c for c in CASES if c[0] == case)
    with pytest.raises(HloError) as info:
        import_hlo(broken(old, new), "t.hlo", engine="lark")
    assert info.value.line == line and info.value.message.startswith("expected ")
