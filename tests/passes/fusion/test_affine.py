"""Chains of constant scalings and shifts folded by the fuse pass (`fusion/affine.py`):
which chains fold, what they become, and their values against the chain's own (within the
reassociation's rounding)."""

from __future__ import annotations

import textwrap

import numpy as np

from nxcc.ir import ops
from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.fusion.affine import fold_affine_chains
from nxcc.passes.registry import PASSES
from tests.passes.fusion.test_epilogue import CONV

# x * a + b, then * c + d: a batch norm followed by a scale layer (a, b per channel; c, d
# per channel and [C, 1, 1] as an exporter writes them), then a ReLU
BN_SCALE = """\
module @m {
  func @main(%x: f32[2,3,4,5]) -> (f32[2,3,4,5]) {
    %a = constant() {value = dense<f32[3]: [0.5, -2.0, 3.0]>} : f32[3]
    %b = constant() {value = dense<f32[3]: [0.1, 0.2, 0.3]>} : f32[3]
    %c = constant() {value = dense<f32[3,1,1]: [1.5, 0.25, -1.0]>} : f32[3,1,1]
    %d = constant() {value = splat<f32[2,3,4,5]: 0.75>} : f32[2,3,4,5]
    %ab = broadcast_in_dim(%a) {shape = [2, 3, 4, 5], broadcast_dimensions = [1]} : f32[2,3,4,5]
    %bb = broadcast_in_dim(%b) {shape = [2, 3, 4, 5], broadcast_dimensions = [1]} : f32[2,3,4,5]
    %cb = broadcast_in_dim(%c) {shape = [2, 3, 4, 5], broadcast_dimensions = [1, 2, 3]} : f32[2,3,4,5]
    %m1 = multiply(%x, %ab) : f32[2,3,4,5]
    %a1 = add(%bb, %m1) : f32[2,3,4,5]
    %m2 = multiply(%a1, %cb) : f32[2,3,4,5]
    %a2 = add(%m2, %d) : f32[2,3,4,5]
    %z = constant() {value = splat<f32[2,3,4,5]: 0.0>} : f32[2,3,4,5]
    %r = maximum(%a2, %z) : f32[2,3,4,5]
    return %r
  }
}
"""


def _module(text: str):  # type: ignore[no-untyped-def]
    return parse_module(textwrap.dedent(text))


def _run(module, *args: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    return IRContext(module).call("main", list(args))[0]


def _opcodes(module) -> list[str]:  # type: ignore[no-untyped-def]
    return [op.opdef.name for op in module.functions["main"].body
            if op.opdef not in (ops.constant, ops.broadcast_in_dim)]


def test_a_batch_norm_and_scale_become_one_multiply_and_one_add() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    module = _module(BN_SCALE)
    want = _run(module, x)
    assert fold_affine_chains(module, module.functions["main"])
    PASSES["dce"]().run(module)
    verify_module(module)
    assert _opcodes(module) == ["multiply", "add", "maximum"]
    got = _run(module, x)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-6)
    a, b = np.array([0.5, -2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    c = np.array([1.5, 0.25, -1.0])
    ref = (x.astype(np.float64) * (a * c)[:, None, None]
           + (b * c + 0.75)[:, None, None])
    np.testing.assert_allclose(got, np.maximum(ref, 0), rtol=1e-6, atol=1e-6)


def test_two_shifts_or_two_scalings_become_one() -> None:
    module = _module(BN_SCALE.replace("%a2 = add(%m2, %d)", "%a2 = multiply(%m2, %d)")
                     .replace("%m2 = multiply(%a1, %cb)", "%m2 = add(%a1, %cb)")
                     .replace("%m1 = multiply(%x, %ab)", "%m1 = add(%x, %ab)"))
    assert fold_affine_chains(module, module.functions["main"])
    PASSES["dce"]().run(module)
    # (x + a + b + c) * d = x * d + (a + b + c) * d
    assert _opcodes(module) == ["multiply", "add", "maximum"]
    chain = _module(BN_SCALE.replace("%m2 = multiply(%a1, %cb)", "%m2 = add(%a1, %cb)")
                    .replace("%m1 = multiply(%x, %ab)", "%m1 = add(%x, %ab)"))
    assert fold_affine_chains(chain, chain.functions["main"])
    PASSES["dce"]().run(chain)
    assert _opcodes(chain) == ["add", "maximum"]  # four shifts: one add


def test_a_link_read_elsewhere_or_a_non_constant_ends_the_chain() -> None:
    shared = BN_SCALE.replace("-> (f32[2,3,4,5])", "-> (f32[2,3,4,5], f32[2,3,4,5])").replace(
        "return %r", "return %r, %a1")
    module = _module(shared)
    # m1 -> a1 is read twice: the chain m2 -> a2 of two different links is left
    assert not fold_affine_chains(module, module.functions["main"])
    param = BN_SCALE.replace("(%x: f32[2,3,4,5])", "(%x: f32[2,3,4,5], %y: f32[2,3,4,5])"
                             ).replace("multiply(%a1, %cb)", "multiply(%a1, %y)")
    module = _module(param)
    assert not fold_affine_chains(module, module.functions["main"])


def test_integers_are_left_alone() -> None:
    text = """\
    module @m {
      func @main(%x: s32[4]) -> (s32[4]) {
        %a = constant() {value = splat<s32[4]: 3>} : s32[4]
        %m = multiply(%x, %a) : s32[4]
        %n = multiply(%m, %a) : s32[4]
        return %n
      }
    }
    """
    module = _module(text)
    assert not fold_affine_chains(module, module.functions["main"])


def test_bias_then_batch_norm_after_a_convolution_leaves_add_and_relu() -> None:
    """conv + bias, then a batch norm's scale and shift and a ReLU: the scaling moves first
    and folds into the weights, the shifts become one add."""
    text = f"""\
    module @m {{
      func @main(%x: f32[1,3,6,6]) -> (f32[1,4,6,6]) {{
        %w = constant() {{value = splat<f32[4,3,3,3]: 0.5>}} : f32[4,3,3,3]
        %cv = convolution(%x, %w) {{{CONV}}} : f32[1,4,6,6]
        %b = constant() {{value = dense<f32[4]: [1.0, 2.0, 3.0, 4.0]>}} : f32[4]
        %s = constant() {{value = dense<f32[4]: [2.0, 0.5, 1.0, -1.0]>}} : f32[4]
        %bb = broadcast_in_dim(%b) {{shape = [1, 4, 6, 6], broadcast_dimensions = [1]}} : f32[1,4,6,6]
        %sb = broadcast_in_dim(%s) {{shape = [1, 4, 6, 6], broadcast_dimensions = [1]}} : f32[1,4,6,6]
        %a = add(%cv, %bb) : f32[1,4,6,6]
        %m = multiply(%a, %sb) : f32[1,4,6,6]
        %t = add(%m, %bb) : f32[1,4,6,6]
        %z = constant() {{value = splat<f32[1,4,6,6]: 0.0>}} : f32[1,4,6,6]
        %r = maximum(%t, %z) : f32[1,4,6,6]
        return %r
      }}
    }}
    """
    x = np.random.default_rng(1).standard_normal((1, 3, 6, 6)).astype(np.float32)
    module = _module(text)
    want = _run(module, x)
    for name in ("fuse", "fuse-epilogue"):
        PASSES[name]().run(module)
    verify_module(module)
    fused = [op for op in module.functions["main"].body if op.opdef is ops.fused_convolution]
    assert len(fused) == 1
    assert str(fused[0].attrs["program"]).endswith("t0 = add(a0, a1); t1 = maximum(t0, a2)")
    np.testing.assert_allclose(_run(module, x), want, rtol=1e-6, atol=1e-5)
