"""The IR parser names the line, column and problem of bad text."""

from __future__ import annotations

import pytest

from nxcc.ir.parser import IRParseError, parse_module

HEAD = "module @m {\n  func @main(%x: f32[2]) -> (f32[2]) {\n"


def parse_body(body: str, ret: str = "%x") -> None:
    parse_module(HEAD + body + f"    return {ret}\n  }}\n}}\n", "t.ir")


@pytest.mark.parametrize(
    ("body", "ret", "message"),
    [
        ("    %y = add(%x, %z) : f32[2]\n", "%y", "t.ir:3:.*use of undefined value %z"),
        ("    %y = frobnicate(%x) : f32[2]\n", "%y", "t.ir:3:.*unknown op 'frobnicate'"),
        ("    %y = add(%x, %x) : f32[3]\n", "%y", r"add results are \(f32\[2\]\), the text says"),
        ("    %y = add(%x) : f32[2]\n", "%y", "add takes 2 operands, got 1"),
        ("    %y = exp(%x) {bogus = 1} : f32[2]\n", "%y", "exp has no attribute 'bogus'"),
        ("    %y = compare(%x, %x) {direction = SIDEWAYS} : pred[2]\n", "%x",
         "expected one of EQ, NE, LT, LE, GT, GE"),
        ("    %y = reshape(%x) : f32[2]\n", "%y", "reshape needs attribute 'shape'"),
        ("    %y = exp(%x) : f32[2]\n    %y = exp(%x) : f32[2]\n", "%y", "defined twice"),
        ("    %y = exp(%x) : q7[2]\n", "%y", "unknown element type 'q7'"),
        ("    %y = exp(%x) : f32[2\n", "%y", r"t.ir:4:5: syntax error"),
        ("    %y = constant() {value = dense<f32[3]: [1.0, 2.0]>} : f32[3]\n", "%x",
         "dense has 2 values, f32\\[3\\] needs 3"),
        ("    %y = reduce(%x, %x) {dimensions = [0], computation = @nope} : f32[]\n", "%x",
         "init value 0 must be a scalar"),
    ],
)
def test_bad_text_is_reported_with_position(body: str, ret: str, message: str) -> None:
    with pytest.raises(IRParseError, match=message):
        parse_body(body, ret)


def test_return_type_mismatch() -> None:
    with pytest.raises(IRParseError, match="returns values whose types differ"):
        parse_module(HEAD + "    %y = iota() {dtype = s32, shape = [2], dimension = 0} : s32[2]\n"
                     "    return %y\n  }\n}\n")


def test_missing_entry_function() -> None:
    with pytest.raises(IRParseError, match="entry function @main is not defined"):
        parse_module("module @m {\n}\n")
