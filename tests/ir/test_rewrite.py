"""The rewrite-pattern driver (`ir.patterns`), as text tests: IR in, patterns applied to a
fixed point, IR out; and the mistakes of a pattern it refuses."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import pytest

from nxcc.ir.core import Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import get_opdef
from nxcc.ir.parser import parse_module
from nxcc.ir.patterns import RewritePattern, Rewriter, apply_patterns, pattern, rewrite_function
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module


@pattern("negate")
def double_negation(op: Op, rewriter: Rewriter) -> list[Value] | None:
    # negate(negate(x)) -> x
    inner = op.operands[0].owner
    if inner is None or inner.opcode != "negate":
        return None
    return [inner.operands[0]]


@pattern("subtract")
def subtract_as_add(op: Op, rewriter: Rewriter) -> list[Value] | None:
    # subtract(x, y) -> add(x, negate(y))
    x, y = op.operands
    return [rewriter.b.add(x, rewriter.b.negate(y))]


class AddZero(RewritePattern):
    """add(x, constant 0) -> x; matches by op definition."""

    ops = (get_opdef("add"),)

    def rewrite(self, op: Op, rewriter: Rewriter) -> list[Value] | None:
        zero = op.operands[1].owner
        if zero is None or zero.opcode != "constant" or zero.attrs["value"].array.any():
            return None
        return [op.operands[0]]


def check(text: str, patterns: Sequence[RewritePattern], expected: str, *,
          changed: bool = True, root: str | None = None) -> None:
    module = parse_module(textwrap.dedent(text))
    assert apply_patterns(module, patterns, root=root) is changed
    verify_module(module)
    got = print_module(module)
    assert got == textwrap.dedent(expected), f"got:\n{got}"


def test_replaces_uses_and_keeps_the_replaced_inputs() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = negate(%x) : f32[4]
            %b = negate(%a) : f32[4]
            %c = exp(%b) : f32[4]
            return %c
          }
        }
        """,
        [double_negation],
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = negate(%x) : f32[4]
            %c = exp(%x) : f32[4]
            return %c
          }
        }
        """,
    )


def test_new_ops_are_rewritten_too() -> None:
    # subtract(x, negate(y)) -> add(x, negate(negate(y))) -> add(x, y)
    check(
        """\
        module @m {
          func @main(%x: f32[4], %y: f32[4]) -> (f32[4]) {
            %n = negate(%y) : f32[4]
            %d = subtract(%x, %n) : f32[4]
            return %d
          }
        }
        """,
        [subtract_as_add, double_negation],
        """\
        module @m {
          func @main(%x: f32[4], %y: f32[4]) -> (f32[4]) {
            %n = negate(%y) : f32[4]
            %0 = add(%x, %y) : f32[4]
            return %0
          }
        }
        """,
    )


def test_chains_of_replacements_reach_the_results() -> None:
    # negate(negate(negate(negate(x)))) -> x, a result of the function
    check(
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4], f32[4]) {
            %a = negate(%x) : f32[4]
            %b = negate(%a) : f32[4]
            %c = negate(%b) : f32[4]
            %d = negate(%c) : f32[4]
            return %d, %b
          }
        }
        """,
        [double_negation],
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4], f32[4]) {
            %a = negate(%x) : f32[4]
            %c = negate(%x) : f32[4]
            return %x, %x
          }
        }
        """,
    )


def test_sweeps_repeat_until_nothing_changes() -> None:
    looked_at: set[int] = set()

    @pattern("negate")
    def second_look(op: Op, rewriter: Rewriter) -> list[Value] | None:
        # declines each op the first time, as a rewrite that an earlier one enables later
        if id(op) not in looked_at:
            looked_at.add(id(op))
            return None
        return [rewriter.b.abs(op.operands[0])]

    @pattern("exp")
    def exp_as_log(op: Op, rewriter: Rewriter) -> list[Value] | None:
        return [rewriter.b.log(op.operands[0])]

    check(
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = exp(%x) : f32[4]
            %b = negate(%a) : f32[4]
            return %b
          }
        }
        """,
        [second_look, exp_as_log],
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %0 = log(%x) : f32[4]
            %1 = abs(%0) : f32[4]
            return %1
          }
        }
        """,
    )


def test_patterns_see_only_their_ops() -> None:
    seen: list[str] = []

    @pattern("exp", "log")
    def record(op: Op, rewriter: Rewriter) -> list[Value] | None:
        seen.append(op.opcode)
        rewriter.b.negate(op.operands[0])  # built, then dropped: the pattern declines
        return None

    text = """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = exp(%x) : f32[4]
            %b = add(%a, %x) : f32[4]
            %c = log(%b) : f32[4]
            return %c
          }
        }
        """
    check(text, [record], text, changed=False)
    assert seen == ["exp", "log"]


def test_match_by_op_definition() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %z = constant() {value = splat<f32[4]: 0.0>} : f32[4]
            %a = add(%x, %z) : f32[4]
            %b = multiply(%a, %a) : f32[4]
            return %b
          }
        }
        """,
        [AddZero()],
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %z = constant() {value = splat<f32[4]: 0.0>} : f32[4]
            %b = multiply(%x, %x) : f32[4]
            return %b
          }
        }
        """,
    )


CALLS = """\
    module @m {
      func @main(%x: f32[4]) -> (f32[]) {
        %z = constant() {value = splat<f32[]: 0.0>} : f32[]
        %s = reduce(%x, %z) {dimensions = [0], computation = @sum} : f32[]
        return %s
      }
      func @sum(%a: f32[], %b: f32[]) -> (f32[]) {
        %n = negate(%b) : f32[]
        %d = subtract(%a, %n) : f32[]
        return %d
      }
      func @unused(%a: f32[], %b: f32[]) -> (f32[]) {
        %d = subtract(%a, %b) : f32[]
        return %d
      }
    }
    """


def test_root_walks_the_functions_it_calls() -> None:
    check(
        CALLS,
        [subtract_as_add, double_negation],
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[]) {
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %s = reduce(%x, %z) {dimensions = [0], computation = @sum} : f32[]
            return %s
          }
          func @sum(%a: f32[], %b: f32[]) -> (f32[]) {
            %n = negate(%b) : f32[]
            %0 = add(%a, %b) : f32[]
            return %0
          }
          func @unused(%a: f32[], %b: f32[]) -> (f32[]) {
            %d = subtract(%a, %b) : f32[]
            return %d
          }
        }
        """,
        root="main",
    )


def test_without_root_every_function_is_rewritten() -> None:
    module = parse_module(textwrap.dedent(CALLS))
    assert apply_patterns(module, [subtract_as_add])
    assert [op.opcode for op in module.functions["unused"].body] == ["negate", "add"]


def test_start_leaves_the_ops_before_it() -> None:
    module = parse_module(textwrap.dedent("""\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = negate(%x) : f32[4]
            %b = negate(%a) : f32[4]
            %c = subtract(%b, %x) : f32[4]
            return %c
          }
        }
        """))
    fn = module.entry_function
    subtract = fn.body[2].result
    replaced = rewrite_function(module, fn, [subtract_as_add, double_negation], start=2)
    assert [op.opcode for op in fn.body] == ["negate", "negate", "negate", "add"]
    assert fn.body[3].operands[0] is fn.body[1].result  # %b, before `start`, is kept
    assert replaced == {subtract: fn.body[3].result}
    assert fn.results == [fn.body[3].result]


def test_a_pattern_of_the_wrong_type_is_refused() -> None:
    @pattern("exp")
    def widen(op: Op, rewriter: Rewriter) -> list[Value] | None:
        return [rewriter.b.convert(op.operands[0], DType.F64)]

    module = parse_module(textwrap.dedent(CALLS.replace("%n = negate(%b)", "%n = exp(%b)")))
    with pytest.raises(ValueError, match=r"widen replaced a exp result of type f32\[\] by a "
                                         r"value of type f64\[\]"):
        apply_patterns(module, [widen])


def test_a_pattern_that_returns_its_own_op_is_refused() -> None:
    @pattern("negate")
    def in_place(op: Op, rewriter: Rewriter) -> list[Value] | None:
        return op.results

    module = parse_module(textwrap.dedent(CALLS))
    with pytest.raises(ValueError, match="in_place returned negate's own result"):
        apply_patterns(module, [in_place])


def test_patterns_that_never_settle_are_an_error() -> None:
    @pattern("negate")
    def renegate(op: Op, rewriter: Rewriter) -> list[Value] | None:
        return [rewriter.b.negate(op.operands[0])]

    module = parse_module(textwrap.dedent(CALLS))
    with pytest.raises(RuntimeError, match="still change it after 16 rewrites in a row"):
        apply_patterns(module, [renegate])
