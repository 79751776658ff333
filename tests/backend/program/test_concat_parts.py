"""Concatenations planned in place (`concat_parts`): the ops making the operands write
their slices, the others are copied, no concatenate instruction is left; the executor's
results are the interpreter's, exactly, for slices along features, batch and width, more
than one image, nested concatenations and operands read elsewhere too."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.passes.fusion.elementwise import FuseElementwise
from nxcc.passes.fusion.epilogue import FuseEpilogues

RNG = np.random.default_rng(21)

CONV = ("window_strides = [1, 1], padding = [[{p}, {p}], [{p}, {p}]], lhs_dilation = [1, 1], "
        "rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, "
        "input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, "
        "kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, "
        "output_feature_dim = 1, output_spatial_dims = [2, 3]")


def fire(n: int, dim: int) -> str:
    """SqueezeNet's fire module's end, concatenated along `dim`: a 1x1 and a 3x3
    convolution of one input, each with bias and ReLU; then the result concatenated again
    with the 1x1's output (read twice) and the input itself (a parameter: copied)."""
    shape = [n, 4, 6, 6]
    joined = list(shape)
    joined[dim] *= 2
    again = list(joined)
    again[dim] += 2 * shape[dim]

    def t(s: list[int]) -> str:
        return f"f32[{','.join(map(str, s))}]"

    return f"""\
module @m {{
  func @main(%x: {t(shape)}, %w1: f32[4,4,1,1], %w3: f32[4,4,3,3], %b: f32[4]) -> ({t(again)}) {{
    %c1 = convolution(%x, %w1) {{{CONV.format(p=0)}}} : {t(shape)}
    %c3 = convolution(%x, %w3) {{{CONV.format(p=1)}}} : {t(shape)}
    %bb = broadcast_in_dim(%b) {{shape = {shape}, broadcast_dimensions = [1]}} : {t(shape)}
    %z = constant() {{value = splat<{t(shape)}: 0.0>}} : {t(shape)}
    %a1 = add(%c1, %bb) : {t(shape)}
    %r1 = maximum(%a1, %z) : {t(shape)}
    %a3 = add(%c3, %bb) : {t(shape)}
    %r3 = maximum(%a3, %z) : {t(shape)}
    %j = concatenate(%r1, %r3) {{dimension = {dim}}} : {t(joined)}
    %k = concatenate(%j, %r1, %x) {{dimension = {dim}}} : {t(again)}
    return %k
  }}
}}
"""


@pytest.mark.parametrize("n, dim", [(1, 1), (2, 1), (2, 0), (3, 3)])
def test_concatenations_are_written_in_place(n: int, dim: int) -> None:
    text = fire(n, dim)
    module = parse_module(text)
    assert FuseElementwise().run(module) and FuseEpilogues().run(module)
    table = WeightTable()
    program = lower_module(module, table)
    fn = program["functions"]["main"]
    kinds = [ins["op"] for ins in fn["instructions"]]
    # the two convolutions write their slices of %j, which is a slice of %k; %r1's second
    # place and %x are copied
    assert kinds == ["fused_convolution", "fused_convolution", "copy", "copy"], kinds
    out = fn["slots"][fn["results"][0]]
    assert "view_of" in out
    strided = [s for s in fn["slots"] if "strides" in s and "view_of" not in s]
    assert bool(strided) == (dim != 0 and (n > 1 or dim == 3)), fn["slots"]
    executor = ProgramExecutor(program, table.arrays)
    plain = parse_module(text)
    for _ in range(2):  # the planned buffers follow new inputs
        args = [RNG.standard_normal(s).astype(np.float32)
                for s in ((n, 4, 6, 6), (4, 4, 1, 1), (4, 4, 3, 3), (4,))]
        (want,) = IRContext(plain).call("main", args)
        (got,) = executor.run(args)
        np.testing.assert_array_equal(got, want)
        assert (got > 0).any()
