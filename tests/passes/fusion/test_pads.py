"""fuse: sums of zero-padded pieces tiling one dimension become concatenates (text tests),
with the values the pads and adds give (numeric, through the interpreter)."""

from __future__ import annotations

import textwrap

import numpy as np

from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from tests.passes.pass_check import check, run_passes

QKV_GRADIENT = """\
    module @m {
      func @main(%q: f32[2,3,4], %k: f32[2,3,4], %v: f32[2,3,4]) -> (f32[2,3,12]) {
        %z = constant() {value = splat<f32[]: 0.0>} : f32[]
        %pq = pad(%q, %z) {low = [0, 0, 8], high = [0, 0, 0], interior = [0, 0, 0]} : f32[2,3,12]
        %pk = pad(%k, %z) {low = [0, 0, 4], high = [0, 0, 4], interior = [0, 0, 0]} : f32[2,3,12]
        %pv = pad(%v, %z) {low = [0, 0, 0], high = [0, 0, 8], interior = [0, 0, 0]} : f32[2,3,12]
        %a = add(%pq, %pk) : f32[2,3,12]
        %s = add(%a, %pv) : f32[2,3,12]
        return %s
      }
    }
    """


def test_three_padded_pieces_added_are_one_concatenate() -> None:
    check(QKV_GRADIENT, ("fuse",), """\
        module @m {
          func @main(%q: f32[2,3,4], %k: f32[2,3,4], %v: f32[2,3,4]) -> (f32[2,3,12]) {
            %s = concatenate(%v, %k, %q) {dimension = 2} : f32[2,3,12]
            return %s
          }
        }
        """)


def test_two_pieces_of_three_stay_padded_at_the_free_end() -> None:
    text = QKV_GRADIENT.replace("%s = add(%a, %pv)", "%s = add(%a, %a)")
    got = run_passes(text, "fuse")
    assert "concatenate(%k, %q) {dimension = 2} : f32[2,3,8]" in got, got
    assert "low = [0, 0, 4], high = [0, 0, 0]" in got, got


def test_pieces_that_overlap_or_pad_another_value_stay_added() -> None:
    overlap = QKV_GRADIENT.replace("low = [0, 0, 4], high = [0, 0, 4]",
                                   "low = [0, 0, 6], high = [0, 0, 2]")
    assert "concatenate" not in run_passes(overlap, "fuse")
    ones = QKV_GRADIENT.replace("splat<f32[]: 0.0>", "splat<f32[]: 1.0>")
    assert "concatenate" not in run_passes(ones, "fuse")


def test_the_concatenate_gives_the_sum_of_the_pads() -> None:
    plain = parse_module(textwrap.dedent(QKV_GRADIENT))
    fused = parse_module(run_passes(QKV_GRADIENT, "fuse"))
    rng = np.random.default_rng(6)
    args = [rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(3)]
    args[0][0, 0, 0] = np.nan
    want, = IRContext(plain).call("main", args)
    got, = IRContext(fused).call("main", args)
    np.testing.assert_array_equal(got, want)
