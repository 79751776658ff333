"""The fuse pass: what is fused (text tests) and that fused programs compute exactly what
the unfused ops do (numeric tests through the interpreter and the executor)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.fusion.elementwise import FuseElementwise
from tests.passes.pass_check import check


def test_a_chain_with_a_broadcast_bias_becomes_one_op() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
            %bb = broadcast_in_dim(%b) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
            %a = add(%x, %bb) : f32[4,8]
            %e = erf(%a) : f32[4,8]
            %m = multiply(%a, %e) : f32[4,8]
            return %m
          }
        }
        """,
        ("fuse",),
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
            %m = fused_elementwise(%x, %b) {program = "a0[0,1] a1[1]; t0 = add(a0, a1); t1 = erf(t0); t2 = multiply(t0, t1)", shape = [4, 8]} : f32[4,8]
            return %m
          }
        }
        """,
    )


def test_a_value_used_outside_ends_a_group_and_is_computed_once() -> None:
    # %a feeds the reduce too: it is the root of its own group (with the bias broadcast),
    # and the chain after it reads it.
    check(
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[4]) {
            %bb = broadcast_in_dim(%b) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
            %a = add(%x, %bb) : f32[4,8]
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %s = reduce(%a, %z) {dimensions = [1], computation = @add_f32} : f32[4]
            %e = exp(%a) : f32[4,8]
            %n = negate(%e) : f32[4,8]
            return %n, %s
          }
          func @add_f32(%p: f32[], %q: f32[]) -> (f32[]) {
            %0 = add(%p, %q) : f32[]
            return %0
          }
        }
        """,
        ("fuse",),
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[4]) {
            %a = fused_elementwise(%x, %b) {program = "a0[0,1] a1[1]; t0 = add(a0, a1)", shape = [4, 8]} : f32[4,8]
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %s = reduce(%a, %z) {dimensions = [1], computation = @add_f32} : f32[4]
            %n = fused_elementwise(%a) {program = "a0[0,1]; t0 = exp(a0); t1 = negate(t0)", shape = [4, 8]} : f32[4,8]
            return %n, %s
          }
          func @add_f32(%p: f32[], %q: f32[]) -> (f32[]) {
            %0 = add(%p, %q) : f32[]
            return %0
          }
        }
        """,
    )


def test_function_results_lone_ops_and_other_shapes_are_not_absorbed() -> None:
    # %a is a result (used outside); %c is alone; %t is of another shape than its user.
    check(
        """\
        module @m {
          func @main(%x: f32[4], %y: f32[1,4]) -> (f32[4], f32[4], f32[1,4]) {
            %a = exp(%x) : f32[4]
            %b = negate(%a) : f32[4]
            %t = tanh(%y) : f32[1,4]
            %r = reshape(%t) {shape = [4]} : f32[4]
            %c = add(%r, %b) : f32[4]
            %d = abs(%t) : f32[1,4]
            return %a, %c, %d
          }
        }
        """,
        ("fuse",),
        """\
        module @m {
          func @main(%x: f32[4], %y: f32[1,4]) -> (f32[4], f32[4], f32[1,4]) {
            %a = exp(%x) : f32[4]
            %t = tanh(%y) : f32[1,4]
            %r = reshape(%t) {shape = [4]} : f32[4]
            %c = fused_elementwise(%a, %r) {program = "a0[0] a1[0]; t0 = negate(a0); t1 = add(a1, t0)", shape = [4]} : f32[4]
            %d = abs(%t) : f32[1,4]
            return %a, %c, %d
          }
        }
        """,
    )


def test_convert_compare_and_select_fuse_with_their_qualifiers() -> None:
    check(
        """\
        module @m {
          func @main(%x: s32[6], %y: f32[6]) -> (f32[6]) {
            %f = convert(%x) {dtype = f32} : f32[6]
            %p = compare(%f, %y) {direction = GT} : pred[6]
            %s = select(%p, %f, %y) : f32[6]
            return %s
          }
        }
        """,
        ("fuse",),
        """\
        module @m {
          func @main(%x: s32[6], %y: f32[6]) -> (f32[6]) {
            %s = fused_elementwise(%x, %y) {program = "a0[0] a1[0]; t0 = convert.f32(a0); t1 = compare.GT(t0, a1); t2 = select(t1, t0, a1)", shape = [6]} : f32[6]
            return %s
          }
        }
        """,
    )


def test_the_fused_program_is_checked_by_the_type_rule() -> None:
    bad = """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %y = fused_elementwise(%x) {program = "a0[0]; t0 = exp(t1)", shape = [4]} : f32[4]
            return %y
          }
        }
        """
    with pytest.raises(Exception, match="t1"):
        verify_module(parse_module(textwrap.dedent(bad)))


GELU_CHAIN = """\
    module @m {{
      func @main(%x: f32[{s}], %b: f32[{n}], %i: s32[{s}]) -> (f32[{s}], f32[{s}]) {{
        %bb = broadcast_in_dim(%b) {{shape = [{sl}], broadcast_dimensions = [{last}]}} : f32[{s}]
        %h = add(%x, %bb) : f32[{s}]
        %r2 = constant() {{value = splat<f32[{s}]: 1.4142135>}} : f32[{s}]
        %d = divide(%h, %r2) : f32[{s}]
        %e = erf(%d) : f32[{s}]
        %one = constant() {{value = splat<f32[{s}]: 1.0>}} : f32[{s}]
        %a = add(%e, %one) : f32[{s}]
        %m = multiply(%h, %a) : f32[{s}]
        %t = tanh(%m) : f32[{s}]
        %f = convert(%i) {{dtype = f32}} : f32[{s}]
        %p = compare(%t, %f) {{direction = LT}} : pred[{s}]
        %y = select(%p, %t, %h) : f32[{s}]
        %z = exp(%h) : f32[{s}]
        %w = power(%z, %y) : f32[{s}]
        return %w, %h
      }}
    }}
    """


@pytest.mark.parametrize("shape", [(3, 5), (2, 70, 300), (5, 40000), (7,)])
def test_fused_programs_compute_exactly_the_unfused_ops(shape: tuple[int, ...]) -> None:
    """Bit for bit, on shapes of one block and of many (blocks cut in each dimension)."""
    text = GELU_CHAIN.format(s=",".join(map(str, shape)), sl=", ".join(map(str, shape)),
                             n=shape[-1], last=len(shape) - 1)
    plain = parse_module(textwrap.dedent(text))
    fused = parse_module(textwrap.dedent(text))
    assert FuseElementwise().run(fused)
    verify_module(fused)
    assert "fused_elementwise" in print_module(fused)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape[-1]).astype(np.float32),
            rng.integers(-2, 3, shape).astype(np.int32)]
    with np.errstate(all="ignore"):
        want = IRContext(plain).call("main", args)
        got = IRContext(fused).call("main", args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
