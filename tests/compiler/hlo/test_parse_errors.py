"""Broken HLO is reported as FILE:LINE:COL: expected ..., found ..., then the source line and
a caret under the column, with an NCC error code; the command line exits non-zero."""

from __future__ import annotations

import json
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
# One broken text per row of parse_errors.json: [case, old text, new text, line, column,
# code, message fragment]; BASE with `old` replaced by `new` fails at that line and column.
CASES = [tuple(c) for c in json.loads((Path(__file__).parent / "parse_errors.json").read_text())]


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
