"""Malformed or unsupported StableHLO: an HloError at FILE:LINE:COL with an NCC code, and
through the CLI one `ERROR: [CODE] FILE:LINE:COL: ...` line (then the source line and a
caret), a non-zero exit and no NEFF."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.stablehlo.frontend import import_xla
from tests.cli_helpers import neuronx_cc

GOOD = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""

# (name, replace this, with this, code, line, column, words of the message)
CASES = [
    ("undefined value", "%arg0, %arg0", "%arg0, %nope", "NCC_EFRM002", 3, 31, "'%nope'"),
    ("unknown op", "stablehlo.add", "stablehlo.frob", "NCC_EUOC002", 3, 10,
     "stablehlo.frob"),
    ("bad element type", ": tensor<4xf32>\n    return", ": tensor<4xf31>\n    return",
     "NCC_EFRM001", 3, 48, "f31"),
    ("dynamic shape", ": tensor<4xf32>\n    return", ": tensor<?xf32>\n    return",
     "NCC_EUOC003", 3, 46, "dynamic"),
    ("missing type", " : tensor<4xf32>\n    return", "\n    return", "NCC_EFRM001", 4, 5,
     "':' and the type of stablehlo.add"),
    ("wrong result type", "-> tensor<4xf32> {\n    %0 = stablehlo.add %arg0, %arg0 : "
     "tensor<4xf32>\n    return %0 : tensor<4xf32>", "-> tensor<5xf32> {\n    %0 = "
     "stablehlo.add %arg0, %arg0 : tensor<5xf32>\n    return %0 : tensor<5xf32>",
     "NCC_EFRM002", 3, 10, "f32[5]"),
    ("value defined twice", "    return %0", "    %0 = stablehlo.add %0, %0 : tensor<4xf32>"
     "\n    return %0", "NCC_EFRM002", 4, 10, "'%0' defined again"),
    ("two terminators", "    return %0 : tensor<4xf32>\n", "    return %0 : tensor<4xf32>\n"
     "    return %arg0 : tensor<4xf32>\n", "NCC_EFRM002", 5, 5, "to end its block"),
    ("operand type annotation", "%0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
     '%0 = "stablehlo.add"(%arg0, %arg0) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>',
     "NCC_EFRM002", 3, 33, "operand 1 of stablehlo.add to be f32[8]"),
    ("return type annotation", "return %0 : tensor<4xf32>", "return %0 : tensor<2x2xf32>",
     "NCC_EFRM002", 4, 12, "%0 to be f32[2,2] as the return says"),
    ("entry signature", ") -> tensor<4xf32> {", ") -> tensor<2x2xf32> {", "NCC_EFRM002", 4,
     5, "@main to return (f32[2,2]) as its signature says, found (f32[4])"),
    ("function defined twice", "  }\n}\n", "  }\n  func.func @main(%arg0: tensor<4xf32>) -> "
     "tensor<4xf32> {\n    return %arg0 : tensor<4xf32>\n  }\n}\n", "NCC_EFRM002", 6, 3,
     "@main again"),
    ("call operand types", "%0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
     "%0 = func.call @g(%arg0) : (tensor<4xf32>) -> tensor<4xf32>", "NCC_EFRM002", 3, 10,
     "operands of the call to @g to be (f32[8])"),
    ("unclosed region", "  }\n}\n", "", "NCC_EFRM001", 5, 1, "'}'"),
    ("bad character", "%0 = stablehlo", "%0 = ` stablehlo", "NCC_EFRM001", 3, 10, "'`'"),
    ("unknown callee", "%0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
     "%0 = func.call @nowhere(%arg0) : (tensor<4xf32>) -> tensor<4xf32>", "NCC_EFRM002", 3,
     10, "@nowhere"),
    ("bad dense literal", "%0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
     "%0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<4xf32>", "NCC_EFRM001", 3, 35,
     "expected 4 values"),
]


CALLEE = """  func.func private @g(%arg0: tensor<8xf32>) -> tensor<4xf32> {
    %0 = stablehlo.slice %arg0 [0:4] : (tensor<8xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


@pytest.mark.parametrize(("old", "new", "code", "line", "col", "words"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_is_positioned(old: str, new: str, code: str, line: int, col: int,
                             words: str) -> None:
    text = GOOD.replace(old, new)
    if "@g(" in new:
        text = text[:text.rindex("}")] + CALLEE
    assert text != GOOD
    with pytest.raises(HloError) as info:
        import_xla(text)
    err = info.value
    assert (err.code, err.line, err.column) == (code, line, col), err.headline
    assert words in err.message
    assert str(err).splitlines()[2].index("^") == col + 1


def test_cli_reports_one_error_line_with_the_file_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(GOOD.replace("stablehlo.add", "stablehlo.frob"))
    out = tmp_path / "bad.neff"
    r = neuronx_cc("compile", str(bad), "--target", "trn1", "--output", str(out))
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("ERROR: [NCC_EUOC002] ") and f"{bad}:3:10:" in first
    assert not out.exists()


def test_text_that_is_not_mlir_is_left_to_the_hlo_parser(tmp_path: Path) -> None:
    hlo = tmp_path / "p.mlir"
    hlo.write_text("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n")
    module = import_xla(str(hlo))
    assert [p.name for p in module.entry_function.params] == ["p"]


def test_unclosed_brackets_fail_at_once() -> None:
    """A location, type or attribute that never closes is an error, not a regex that
    backtracks for ever."""
    tail = "".join(f'#loc{k} = loc("/a/b/make_fixtures.py":{k}:12 to {k + 1}:58)\n'
                   for k in range(40))
    for broken in (GOOD + '#loc = loc("a.py":1:2 to 3:4\n' + tail,
                   GOOD.replace("tensor<4xf32>)", "tensor<4xf32 " + "x" * 40 + ")"),
                   GOOD + "#x = #stablehlo.thing<" + "a, " * 40 + "\n"):
        with pytest.raises(HloError):
            import_xla(broken)


CONV = """module @m {
  func.func public @main(%arg0: tensor<1x4x4x1xf32>, %arg1: KERNEL) -> tensor<1x4x4x1xf32> {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, KERNEL) -> tensor<1x4x4x1xf32>
    return %0 : tensor<1x4x4x1xf32>
  }
}
"""


KERNELS = [("tensor<3x3x1x1xf32>", None), ("tensor<2xf32>", "does not have the 4 dimensions"),
           ("tuple<tensor<3x3x1x1xf32>>", "expected a tensor as operand 1")]


@pytest.mark.parametrize(("kernel", "words"), KERNELS, ids=["right", "rank-1", "tuple"])
def test_convolution_kernel_of_the_wrong_rank(kernel: str, words: str | None) -> None:
    """(Found by the fuzzer: an IndexError, an AttributeError.) A kernel whose type lacks
    the dimensions dim_numbers names is an error at the op."""
    text = CONV.replace("KERNEL", kernel)
    if words is None:
        import_xla(text)
        return
    with pytest.raises(HloError) as info:
        import_xla(text)
    assert info.value.line == 3 and words in info.value.message


OPERANDS = """module @m {
  func.func public @main(%arg0: tuple<tensor<4xf32>>) -> tensor<4xf32> {
    OP
  }
}
"""
TUPLE_OPERAND = [  # (found by the fuzzer: AttributeError 'TupleShape' has no 'dims')
    '%0 = "stablehlo.sort"(%arg0) ({\n ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n'
    '  %c = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>\n'
    '  stablehlo.return %c : tensor<i1>\n }) {dimension = 0 : i64} : '
    '(tuple<tensor<4xf32>>) -> tensor<4xf32>',
    '%0 = "stablehlo.dot"(%arg0, %arg0) : (tuple<tensor<4xf32>>, tuple<tensor<4xf32>>) '
    '-> tensor<4xf32>',
]


@pytest.mark.parametrize("line", TUPLE_OPERAND, ids=["sort", "dot"])
def test_an_op_given_a_tuple_where_it_takes_a_tensor(line: str) -> None:
    with pytest.raises(HloError) as info:
        import_xla(OPERANDS.replace("OP", line + "\n    return %0 : tensor<4xf32>"))
    assert "expected a tensor as operand 0" in info.value.message


def test_result_count_is_bounded() -> None:
    """(Found by the fuzzer: `%0:2147483648 = ...` built a list of 2^31 names, a hang.)"""
    text = GOOD.replace("%0 = stablehlo.add", "%0:2147483648 = stablehlo.add")
    with pytest.raises(HloError) as info:
        import_xla(text)
    assert "a number of results from 1 to 65536" in info.value.message


def test_tuple_types_nested_too_deep() -> None:
    """(Found by the fuzzer: a RecursionError.) Tuple types nest at most 64 deep."""
    deep = "tuple<" * 3000 + "tensor<4xf32>" + ">" * 3000
    with pytest.raises(HloError) as info:
        import_xla(GOOD.replace("-> tensor<4xf32>", f"-> {deep}"))
    assert "tuples nest at most 64 deep" in info.value.message
    assert import_xla(GOOD.replace("(%arg0: tensor<4xf32>)",
                                   "(%arg0: tensor<4xf32>, %a: tuple<tuple<tensor<4xf32>>>)"))


@pytest.mark.parametrize(("old", "new", "words"), [
    (": tensor<4xf32>\n    return", ": tensor<" + "2x" * 20 + "f32>\n    return",
     "rank 20 is over the limit of 16"),
    ("%0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
     "%0 = stablehlo.constant dense<1.0> : tensor<65536x65536xf32>",
     "over the limit of 1073741824"),
], ids=["rank-20", "16-gib-constant"])
def test_types_over_the_size_limits(old: str, new: str, words: str) -> None:
    """(Found by the fuzzer: MemoryError filling a constant of 2^52 elements.) Tensor types
    are bounded where they are read, as HLO text's shapes are."""
    with pytest.raises(HloError) as info:
        import_xla(GOOD.replace(old, new))
    assert words in info.value.message
