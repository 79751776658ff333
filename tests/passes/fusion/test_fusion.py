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
from tests.passes.pass_check import check, run_passes


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


NORMALIZE = """\
    module @m {
      func @main(%x: f32[3,40]) -> (f32[3,40], f32[3,40]) {
        %ninf = constant() {value = splat<f32[]: -inf>} : f32[]
        %zero = constant() {value = splat<f32[]: 0.0>} : f32[]
        %mx = reduce(%x, %ninf) {dimensions = [1], computation = @maximum_f32} : f32[3]
        %mx1 = reshape(%mx) {shape = [3, 1]} : f32[3,1]
        %mxb = broadcast_in_dim(%mx1) {shape = [3, 40], broadcast_dimensions = [0, 1]} : f32[3,40]
        %d = subtract(%x, %mxb) : f32[3,40]
        %e = exp(%d) : f32[3,40]
        %s = reduce(%e, %zero) {dimensions = [1], computation = @add_f32} : f32[3]
        %s1 = reshape(%s) {shape = [3, 1]} : f32[3,1]
        %sb = broadcast_in_dim(%s1) {shape = [3, 40], broadcast_dimensions = [0, 1]} : f32[3,40]
        %sm = divide(%e, %sb) : f32[3,40]
        %n = constant() {value = splat<f32[3,1]: 40.0>} : f32[3,1]
        %t = reduce(%x, %zero) {dimensions = [1], computation = @add_f32} : f32[3]
        %t1 = reshape(%t) {shape = [3, 1]} : f32[3,1]
        %mean = divide(%t1, %n) : f32[3,1]
        %meanb = broadcast_in_dim(%mean) {shape = [3, 40], broadcast_dimensions = [0, 1]} : f32[3,40]
        %c = subtract(%x, %meanb) : f32[3,40]
        %cc = multiply(%c, %c) : f32[3,40]
        %v = reduce(%cc, %zero) {dimensions = [1], computation = @add_f32} : f32[3]
        %v1 = reshape(%v) {shape = [3, 1]} : f32[3,1]
        %var = divide(%v1, %n) : f32[3,1]
        %eps = constant() {value = splat<f32[3,1]: 1e-05>} : f32[3,1]
        %ve = add(%var, %eps) : f32[3,1]
        %r = rsqrt(%ve) : f32[3,1]
        %rb = broadcast_in_dim(%r) {shape = [3, 40], broadcast_dimensions = [0, 1]} : f32[3,40]
        %ln = multiply(%c, %rb) : f32[3,40]
        %g = constant() {value = splat<f32[3,40]: 2.0>} : f32[3,40]
        %y = multiply(%ln, %g) : f32[3,40]
        return %sm, %y
      }
      func @maximum_f32(%a: f32[], %b: f32[]) -> (f32[]) {
        %0 = maximum(%a, %b) : f32[]
        return %0
      }
      func @add_f32(%a: f32[], %b: f32[]) -> (f32[]) {
        %0 = add(%a, %b) : f32[]
        return %0
      }
    }
    """


def test_softmax_and_layer_norm_chains_become_row_ops() -> None:
    got = run_passes(NORMALIZE, "fuse")
    body = [line.strip() for line in got.splitlines() if " = " in line and "@m" not in line]
    assert "%sm = softmax(%x) {dimension = 1} : f32[3,40]" in body, got
    assert any(line.startswith("%ln = layer_norm(%x) {dimension = 1, epsilon = 9.99999")
               for line in body), got
    # the scale multiply is fused after the layer norm; nothing of the old chains is left
    assert not any(op in got for op in ("reduce(", "exp(", "rsqrt(")), got


def test_a_softmax_whose_max_is_of_another_value_is_not_matched() -> None:
    text = NORMALIZE.replace("%d = subtract(%x, %mxb)", "%d = subtract(%e0, %mxb)").replace(
        "%mx = reduce(%x,", "%e0 = negate(%x) : f32[3,40]\n        %mx = reduce(%x,")
    got = run_passes(text, "fuse")
    assert "softmax(" not in got and "layer_norm(" in got, got


def test_row_ops_compute_what_their_chains_do() -> None:
    plain = parse_module(textwrap.dedent(NORMALIZE))
    fused = parse_module(textwrap.dedent(NORMALIZE))
    FuseElementwise().run(fused)
    x = np.random.default_rng(2).standard_normal((3, 40)).astype(np.float32) * 5
    want = IRContext(plain).call("main", [x])
    got = IRContext(fused).call("main", [x])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)


def test_a_cube_by_a_constant_becomes_float64_products() -> None:
    text = """\
        module @m {
          func @main(%x: f32[5000]) -> (f32[5000]) {
            %three = constant() {value = splat<f32[5000]: 3.0>} : f32[5000]
            %c = power(%x, %three) : f32[5000]
            %t = tanh(%c) : f32[5000]
            return %t
          }
        }
        """
    got = run_passes(text, "fuse")
    assert ('program = "a0[0]; t0 = convert.f64(a0); t1 = multiply(t0, t0); '
            't2 = multiply(t1, t0); t3 = convert.f32(t2); t4 = tanh(t3)"') in got, got
    plain, fused = parse_module(textwrap.dedent(text)), parse_module(got)
    x = np.random.default_rng(3).standard_normal(5000).astype(np.float32) * 3
    want, = IRContext(plain).call("main", [x])
    have, = IRContext(fused).call("main", [x])
    np.testing.assert_array_max_ulp(have, want, maxulp=1)


COPIES = """\
    module @m {{
      func @main(%x: f32[{s}], %b: f32[{n}], %g: f32[{s}], %z: f32[{s}]) -> (f32[{s}], f32[{s}]) {{
        %bb = broadcast_in_dim(%b) {{shape = [{sl}], broadcast_dimensions = [{last}]}} : f32[{s}]
        %h = add(%x, %bb) : f32[{s}]
        %s = multiply(%h, %h) : f32[{s}]
        %t = tanh(%s) : f32[{s}]
        %half = constant() {{value = splat<f32[{s}]: 0.5>}} : f32[{s}]
        %p = multiply(%h, %half) : f32[{s}]
        %q = add(%x, %z) : f32[{s}]
        %y0 = multiply(%p, %t) : f32[{s}]
        %y = multiply(%y0, %q) : f32[{s}]
        %d = multiply(%g, %p) : f32[{s}]
        %e = multiply(%d, %t) : f32[{s}]
        %f0 = multiply(%e, %s) : f32[{s}]
        %f = add(%f0, %q) : f32[{s}]
        return %y, %f
      }}
    }}
    """


def _copies(shape: tuple[int, ...]) -> str:
    return COPIES.format(s=",".join(map(str, shape)), sl=", ".join(map(str, shape)),
                         n=shape[-1], last=len(shape) - 1)


def test_cheap_values_read_by_several_groups_are_computed_in_each() -> None:
    # %h, %s and %p (a GELU's forward values its backward reads) are computed again in
    # each group that reads them, from %x and the bias: none of them is written to
    # memory. The tanh is not cheap: its group writes it and the others read it. %q reads
    # two arrays: copying it would read more than reading it, so its own op stays.
    check(
        _copies((4, 8)),
        ("fuse",),
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8], %g: f32[4,8], %z: f32[4,8]) -> (f32[4,8], f32[4,8]) {
            %t = fused_elementwise(%x, %b) {program = "a0[0,1] a1[1]; t0 = add(a0, a1); t1 = multiply(t0, t0); t2 = tanh(t1)", shape = [4, 8]} : f32[4,8]
            %half = constant() {value = splat<f32[4,8]: 0.5>} : f32[4,8]
            %q = add(%x, %z) : f32[4,8]
            %y = fused_elementwise(%x, %b, %half, %t, %q) {program = "a0[0,1] a1[1] a2[0,1] a3[0,1] a4[0,1]; t0 = add(a0, a1); t1 = multiply(t0, a2); t2 = multiply(t1, a3); t3 = multiply(t2, a4)", shape = [4, 8]} : f32[4,8]
            %f = fused_elementwise(%x, %b, %half, %g, %t, %q) {program = "a0[0,1] a1[1] a2[0,1] a3[0,1] a4[0,1] a5[0,1]; t0 = add(a0, a1); t1 = multiply(t0, t0); t2 = multiply(t0, a2); t3 = multiply(a3, t2); t4 = multiply(t3, a4); t5 = multiply(t4, t1); t6 = add(t5, a5)", shape = [4, 8]} : f32[4,8]
            return %y, %f
          }
        }
        """,
    )


def test_a_value_also_read_by_another_kind_of_op_is_not_copied() -> None:
    # the reduce keeps %h in memory whatever the groups do: they read it, as before
    check(
        """\
        module @m {
          func @main(%x: f32[4,8], %b: f32[8], %g: f32[4,8]) -> (f32[4,8], f32[4,8], f32[]) {
            %bb = broadcast_in_dim(%b) {shape = [4, 8], broadcast_dimensions = [1]} : f32[4,8]
            %h = add(%x, %bb) : f32[4,8]
            %t = tanh(%h) : f32[4,8]
            %d = multiply(%g, %h) : f32[4,8]
            %zero = constant() {value = splat<f32[]: 0.0>} : f32[]
            %r = reduce(%h, %zero) {dimensions = [0, 1], computation = @add_f32} : f32[]
            return %t, %d, %r
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
          func @main(%x: f32[4,8], %b: f32[8], %g: f32[4,8]) -> (f32[4,8], f32[4,8], f32[]) {
            %h = fused_elementwise(%x, %b) {program = "a0[0,1] a1[1]; t0 = add(a0, a1)", shape = [4, 8]} : f32[4,8]
            %t = tanh(%h) : f32[4,8]
            %d = multiply(%g, %h) : f32[4,8]
            %zero = constant() {value = splat<f32[]: 0.0>} : f32[]
            %r = reduce(%h, %zero) {dimensions = [0, 1], computation = @add_f32} : f32[]
            return %t, %d, %r
          }
          func @add_f32(%p: f32[], %q: f32[]) -> (f32[]) {
            %0 = add(%p, %q) : f32[]
            return %0
          }
        }
        """,
    )


@pytest.mark.parametrize("shape", [(4, 8), (3, 50000)])
def test_groups_with_copies_compute_exactly_the_unfused_ops(shape: tuple[int, ...]) -> None:
    text = textwrap.dedent(_copies(shape))
    plain, fused = parse_module(text), parse_module(text)
    assert FuseElementwise().run(fused)
    verify_module(fused)
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape[-1]).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32)]
    want = IRContext(plain).call("main", args)
    got = IRContext(fused).call("main", args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
