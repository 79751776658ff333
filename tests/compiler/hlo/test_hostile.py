"""HLO text a fuzzer or a broken dump hands us ends in one coded error (with its source
line and caret), never a traceback (issue 16): nested tuple shapes, a computation calling
itself, absurd dimensions, unknown element types, oversize literals."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.compiler.hlo.shape_parser import MAX_TUPLE_DEPTH
from nxcc.ir.limits import MAX_TENSOR_BYTES
from tests.inprocess import assert_clean_error, run_cli

ENTRY = """HloModule m

ENTRY main {{
  x = {shape} parameter(0)
  ROOT r = {shape} {body}
}}
"""

CASES = {
    "tuple nested 3000 deep": (
        ENTRY.format(shape="(" * 3000 + "f32[4]" + ")" * 3000, body="copy(x)"),
        ("[NCC_EFRM001]", f"tuples nest at most {MAX_TUPLE_DEPTH} deep")),
    "absurd dimensions": (
        ENTRY.format(shape="f32[1048576,1048576]", body="negate(x)"),
        ("[NCC_EFRM002]", f"over the limit of {MAX_TENSOR_BYTES}")),
    "unknown element type": (ENTRY.format(shape="f77[4]", body="negate(x)"),
                             ("[NCC_EFRM001]", "found 'f77'")),
    "element type the IR lacks": (ENTRY.format(shape="c64[4]", body="negate(x)"),
                                  ("[NCC_EDTY001]", "c64")),
    "oversize literal": (
        "HloModule m\n\nENTRY main {\n  ROOT c = f32[1048576,1048576] constant(0)\n}\n",
        ("[NCC_EFRM002]", "over the limit")),
    "literal braces nested deeper than its shape": (
        "HloModule m\n\nENTRY main {\n  ROOT c = f32[1] constant(" + "{" * 5000 + "1"
        + "}" * 5000 + ")\n}\n", ("[NCC_EFRM",)),
    "computation calling itself": (
        "HloModule m\n\nENTRY main {\n  x = f32[4] parameter(0)\n"
        "  ROOT r = f32[4] call(x), to_apply=main\n}\n",
        ("[NCC_EFRM002]", "'main' calling itself")),
    "computations calling each other": (
        "HloModule m\n\na {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=b\n}"
        "\n\nb {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=a\n}\n\n"
        "ENTRY main {\n  x = f32[4] parameter(0)\n  ROOT r = f32[4] call(x), to_apply=a\n}\n",
        ("[NCC_EFRM002]", "calling itself")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_hlo(tmp_path: Path, case: str) -> None:
    text, fragments = CASES[case]
    path = tmp_path / "m.hlo"
    path.write_text(text)
    out = tmp_path / "m.neff"
    result = run_cli("compile", str(path), "--target", "trn1", "--output", str(out),
                     "--logfile", str(tmp_path / "log.txt"))
    assert_clean_error(result, *fragments)
    assert not out.exists()
