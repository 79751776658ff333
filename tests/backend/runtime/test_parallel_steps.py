"""Large elementwise instructions split into slabs on several threads: the same bits as
unsplit, through the executor's bound steps, and what is left unsplit."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nxcc.backend.runtime import blas_threads, parallel_steps
from nxcc.backend.runtime.bound_steps import bind_step
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.stage_program import compile_function
from nxcc.ir import ops
from nxcc.ir.kernels import KERNELS
from nxcc.ir.kernels.plan import PLANS
from nxcc.ir.parser import parse_module

N = parallel_steps.SLAB_WORK  # elements of a one-pass op in one slab at least

GELU_BACKWARD = f"""\
module @m {{
  func @main(%x: f32[4,{N // 2},3], %g: f32[4,{N // 2},3], %b: f32[3], %row: f32[4,1,3])
      -> (f32[4,{N // 2},3], f32[4,{N // 2},3], f32[4,{N // 2},3], f32[4,{N // 2},3],
          f32[4,{N // 2}]) {{
    %bb = broadcast_in_dim(%b) {{shape = [4, {N // 2}, 3], broadcast_dimensions = [2]}} : f32[4,{N // 2},3]
    %h = add(%x, %bb) : f32[4,{N // 2},3]
    %t = tanh(%h) : f32[4,{N // 2},3]
    %one = constant() {{value = splat<f32[4,{N // 2},3]: 1.0>}} : f32[4,{N // 2},3]
    %tt = multiply(%t, %t) : f32[4,{N // 2},3]
    %d = subtract(%one, %tt) : f32[4,{N // 2},3]
    %y = multiply(%g, %d) : f32[4,{N // 2},3]
    %rb = broadcast_in_dim(%row) {{shape = [4, {N // 2}, 3], broadcast_dimensions = [0, 1, 2]}} : f32[4,{N // 2},3]
    %z = divide(%y, %rb) : f32[4,{N // 2},3]
    %e = exp(%z) : f32[4,{N // 2},3]
    %s = softmax(%x) {{dimension = 2}} : f32[4,{N // 2},3]
    %n = layer_norm(%g) {{dimension = 2, epsilon = 1e-5}} : f32[4,{N // 2},3]
    %zero = constant() {{value = splat<f32[]: 0.0>}} : f32[]
    %r = reduce(%z, %zero) {{dimensions = [2], computation = @add_f32}} : f32[4,{N // 2}]
    return %z, %e, %s, %n, %r
  }}
  func @add_f32(%a: f32[], %b: f32[]) -> (f32[]) {{
    %c = add(%a, %b) : f32[]
    return %c
  }}
}}
"""


def _run(text: str, args: list[np.ndarray], threads: int) -> list[np.ndarray]:
    """The program's results with `threads` threads; every instruction split when more."""
    program = compile_function(parse_module(text), "main", CompileOptions(target="trn1"))
    executor = ProgramExecutor(program.program, program.weights)
    executor.threads = threads
    results = executor.run(args)
    steps = executor.functions["main"].bound(executor).steps
    split = [getattr(s, "func", None) is parallel_steps.side_by_side for s in steps]
    assert all(split) if threads > 1 else not any(split)
    return results


def test_split_instructions_give_the_same_bits_as_unsplit() -> None:
    rng = np.random.default_rng(0)
    shape = (4, N // 2, 3)
    args = [rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(3).astype(np.float32),
            rng.uniform(1, 2, (4, 1, 3)).astype(np.float32)]
    one = _run(GELU_BACKWARD, args, 1)
    for threads in (2, 3):
        for a, b in zip(one, _run(GELU_BACKWARD, args, threads), strict=True):
            np.testing.assert_array_equal(a, b)
    h = args[0] + args[2]
    want = args[1] * (1 - np.tanh(h) ** 2) / args[3]
    np.testing.assert_allclose(one[0], want, rtol=1e-5, atol=1e-6)


def _bind(opdef: ops.OpDef, args: list[np.ndarray], out: np.ndarray, attrs: dict,
          threads: int):
    return bind_step(opdef, KERNELS[opdef], args, [out], attrs, None,  # type: ignore[arg-type]
                     [False] * len(args), None, threads)


def test_slabs_run_on_other_threads_and_split_a_later_dimension() -> None:
    """A [1, R, C] result splits along R; the slabs beyond the first run on pooled threads."""
    x = np.arange(2 * N, dtype=np.float32).reshape(1, 2 * N // 8, 8)
    out = np.empty_like(x)
    seen: set[str] = set()
    plan = PLANS[ops.negate].plan
    assert plan is not None

    def spy(args, o, attrs, ctx, constant, pool):  # type: ignore[no-untyped-def]
        step = plan(args, o, attrs, ctx, constant, pool)
        assert o.shape[1] == N // 8  # each slab half of dimension 1

        def run() -> None:
            seen.add(threading.current_thread().name)
            step()  # type: ignore[misc]
        return run

    step = parallel_steps.split_step(ops.negate, spy, [x], out, {}, None,  # type: ignore[arg-type]
                                     [False], 2)
    assert step is not None
    step()
    np.testing.assert_array_equal(out, -x)
    assert len(seen) == 2 and threading.current_thread().name in seen


@pytest.mark.parametrize("size", [N, 2 * N - 2])
def test_small_results_are_not_split(size: int) -> None:
    x = np.ones(size, np.float32)
    plan = PLANS[ops.negate].plan
    assert parallel_steps.split_step(ops.negate, plan, [x], np.empty_like(x), {}, None,  # type: ignore[arg-type]
                                     [False], 2) is None


def test_the_work_of_its_op_decides_where_it_splits() -> None:
    """At the same size, a one-pass op is left whole and an op of many passes is split."""
    x = np.ones(4 * parallel_steps.MIN_SLAB, np.float32)
    out = np.empty_like(x)
    assert _bind(ops.negate, [x], out, {}, 2) is not None
    assert not parallel_steps.is_split(_bind(ops.negate, [x], out, {}, 2))
    assert parallel_steps.is_split(_bind(ops.exp, [x], out, {}, 2))
    assert parallel_steps.is_split(_bind(ops.softmax, [x.reshape(-1, 64)],
                                         out.reshape(-1, 64), {"dimension": 1}, 2))


def test_a_row_op_is_not_split_along_its_rows() -> None:
    x = np.ones((2 * N, 1), np.float32)  # rows along dimension 0: only that one is long
    plan = PLANS[ops.softmax].plan
    assert parallel_steps.split_step(ops.softmax, plan, [x], np.empty_like(x),  # type: ignore[arg-type]
                                     {"dimension": 0}, None, [False], 2) is None


def test_an_error_in_a_slab_on_another_thread_is_raised_here() -> None:
    x = np.ones(2 * N, np.float32)
    out = np.empty_like(x)
    calls = []

    def failing(args, o, attrs, ctx, constant, pool):  # type: ignore[no-untyped-def]
        def run() -> None:
            calls.append(threading.current_thread().name)
            if threading.current_thread() is not threading.main_thread():
                raise ValueError("slab failed")
        return run

    step = parallel_steps.split_step(ops.negate, failing, [x], out, {}, None,  # type: ignore[arg-type]
                                     [False], 2)
    assert step is not None
    with pytest.raises(ValueError, match="slab failed"):
        step()
    assert len(calls) == 2


def test_one_thread_binds_the_plan_as_it_is() -> None:
    x = np.ones(4 * N, np.float32)
    out = np.empty_like(x)
    step = _bind(ops.negate, [x], out, {}, 1)
    step()
    np.testing.assert_array_equal(out, -x)
    assert getattr(step, "func", None) is not parallel_steps.side_by_side
    assert _bind(ops.negate, [x], out, {}, 2).func is parallel_steps.side_by_side  # type: ignore[attr-defined]


ATTENTION_SCORES = """\
module @m {
  func @main(%q: f32[4,256,8,64], %k: f32[4,256,8,64]) -> (f32[4,8,256,256]) {
    %s = dot_general(%q, %k) {lhs_batch_dims = [0, 2], rhs_batch_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : f32[4,8,256,256]
    return %s
  }
}
"""


def test_a_batch_of_products_splits_between_products_with_the_same_bits() -> None:
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((4, 256, 8, 64)).astype(np.float32) for _ in range(2))
    one = _run(ATTENTION_SCORES, [q, k], 1)[0]
    np.testing.assert_array_equal(_run(ATTENTION_SCORES, [q, k], 2)[0], one)
    np.testing.assert_allclose(one, np.einsum("bshd,bthd->bhst", q, k), rtol=1e-4, atol=1e-4)


GEMM = """\
module @m {
  func @main(%x: f32[2,256,384], %w: f32[512,384]) -> (f32[2,256,512]) {
    %y = dot_general(%x, %w) {lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : f32[2,256,512]
    return %y
  }
}
"""


def test_a_single_product_splits_between_lhs_rows_with_the_same_bits() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 256, 384)).astype(np.float32)
    w = rng.standard_normal((512, 384)).astype(np.float32)
    one = _run(GEMM, [x, w], 1)[0]
    np.testing.assert_array_equal(_run(GEMM, [x, w], 2)[0], one)
    np.testing.assert_allclose(one, x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(blas_threads._library() is None, reason="no OpenBLAS found to ask")
def test_a_function_whose_products_are_split_runs_the_blas_at_one_thread() -> None:
    program = compile_function(parse_module(GEMM), "main", CompileOptions(target="trn1"))
    executor = ProgramExecutor(program.program, program.weights)
    executor.threads = 2
    x = np.ones((2, 256, 384), np.float32)
    w = np.ones((512, 384), np.float32)
    executor.run([x, w])
    bound = executor.functions["main"].bound(executor)
    assert bound.own_threads
    seen = []
    step = bound.steps[0]
    bound.steps[0] = lambda: (seen.append(blas_threads.blas_thread_count()), step())
    before = blas_threads.blas_thread_count()
    np.testing.assert_array_equal(executor.run([x, w])[0], 384.0)
    assert seen == [1] and blas_threads.blas_thread_count() == before


CONV_ATTRS = ("window_strides = [1, 1], padding = [[1, 1], [1, 1]], lhs_dilation = [1, 1], "
              "rhs_dilation = [1, 1], feature_group_count = {groups}, batch_group_count = 1, "
              "input_batch_dim = 0, input_feature_dim = 1, input_spatial_dims = [2, 3], "
              "kernel_output_feature_dim = 0, kernel_input_feature_dim = 1, "
              "kernel_spatial_dims = [2, 3], output_batch_dim = 0, output_feature_dim = 1, "
              "output_spatial_dims = [2, 3]")

CONV_AND_ADD = f"""\
module @m {{{{
  func @main(%x: f32[1,64,64,64], %w: f32[64,1,1,1], %y: f32[4,{N // 2},3])
      -> (f32[1,64,64,64], f32[4,{N // 2},3]) {{{{
    %c = convolution(%x, %w) {{{{{CONV_ATTRS.format(groups=64).replace("[[1, 1], [1, 1]]", "[[0, 0], [0, 0]]")}}}}} : f32[1,64,64,64]
    %e = exp(%y) : f32[4,{N // 2},3]
    return %c, %e
  }}}}
}}}}
""".format()


def test_a_function_with_an_unsplit_convolution_splits_nothing() -> None:
    """A grouped 1x1 convolution of one image has nothing to cut (its output features are
    its groups, its window one element): it keeps the BLAS's threads, so the elementwise
    op is not split."""
    program = compile_function(parse_module(CONV_AND_ADD), "main",
                               CompileOptions(target="trn1"))
    executor = ProgramExecutor(program.program, program.weights)
    executor.threads = 2
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((1, 64, 64, 64), (64, 1, 1, 1), (4, N // 2, 3))]
    got = executor.run(args)
    bound = executor.functions["main"].bound(executor)
    assert not bound.own_threads
    assert not any(parallel_steps.is_split(s) for s in bound.steps)
    np.testing.assert_array_equal(got[1], np.exp(args[2]))


def _conv_relu(batch: int, cin: int, cout: int, window: int, stride: int, groups: int = 1,
               dilation: int = 1, pad: tuple[int, int] | None = None) -> str:
    """A convolution with bias and ReLU (fused into it when compiled) of `batch` images."""
    low, high = pad or (window // 2, window // 2)
    span = (window - 1) * dilation + 1
    rows = (32 + low + high - span) // stride + 1
    cols = (32 + 2 * (window // 2) - span) // stride + 1
    attrs = CONV_ATTRS.format(groups=groups).replace(
        "[1, 1], padding = [[1, 1], [1, 1]], lhs_dilation = [1, 1], rhs_dilation = [1, 1]",
        f"[{stride}, {stride}], padding = [[{low}, {high}], [{window // 2}, {window // 2}]], "
        f"lhs_dilation = [1, 1], rhs_dilation = [{dilation}, {dilation}]")
    size = f"{rows}, {cols}"
    out = f"f32[{batch},{cout},{rows},{cols}]"
    return f"""\
module @m {{
  func @main(%x: f32[{batch},{cin},32,32], %w: f32[{cout},{cin // groups},{window},{window}], %b: f32[{cout}])
      -> ({out}) {{
    %c = convolution(%x, %w) {{{attrs}}} : {out}
    %bb = broadcast_in_dim(%b) {{shape = [{batch}, {cout}, {size}], broadcast_dimensions = [1]}} : {out}
    %a = add(%c, %bb) : {out}
    %z = constant() {{value = splat<{out}: 0.0>}} : {out}
    %r = maximum(%a, %z) : {out}
    return %r
  }}
}}
"""


@pytest.mark.parametrize("batch, cin, cout, window, stride, groups, dilation, pad", [
    (2, 16, 64, 3, 1, 1, 1, None),     # between the images; the row route
    (1, 16, 64, 3, 1, 1, 1, None),     # between output rows; the row route
    (1, 64, 16, 3, 1, 1, 1, None),     # rows; shifted products
    (1, 32, 64, 1, 1, 1, 1, None),     # between output rows; 1x1, its bias by a copy
    (1, 64, 32, 1, 1, 1, 1, None),     # rows; 1x1 on the slab of the input itself
    (3, 3, 128, 3, 2, 1, 1, None),     # images; strided (im2col tiles)
    (1, 16, 64, 3, 2, 1, 1, None),     # rows; strided (im2col tiles)
    (1, 16, 64, 5, 1, 1, 2, (3, 0)),   # rows; dilated, padded above only
    (1, 128, 128, 3, 2, 128, 1, (0, 2)),  # rows; depthwise, strided, padded below only
])
def test_convolutions_split_between_images_rows_or_features_with_the_same_bits(
        batch: int, cin: int, cout: int, window: int, stride: int, groups: int,
        dilation: int, pad: tuple[int, int] | None) -> None:
    rng = np.random.default_rng(8)
    text = _conv_relu(batch, cin, cout, window, stride, groups, dilation, pad)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((batch, cin, 32, 32), (cout, cin // groups, window, window), (cout,))]
    one = _run(text, args, 1)[0]
    np.testing.assert_array_equal(_run(text, args, 2)[0], one)
    assert (one >= 0).all() and (one > 0).any()


CLASSIFIER = """\
module @m {
  func @main(%x: f32[1,2048], %w: f32[1000,2048]) -> (f32[1,1000]) {
    %y = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : f32[1,1000]
    return %y
  }
}
"""


def test_a_product_of_one_row_splits_between_rhs_columns_with_the_same_bits() -> None:
    """A classifier at batch 1 (ResNet-50's last layer): nothing to cut but its columns."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    w = rng.standard_normal((1000, 2048)).astype(np.float32)
    one = _run(CLASSIFIER, [x, w], 1)[0]
    np.testing.assert_array_equal(_run(CLASSIFIER, [x, w], 2)[0], one)
    np.testing.assert_allclose(one, x @ w.T, rtol=1e-4, atol=1e-3)


def test_a_batch_of_one_splits_along_its_next_batch_dim() -> None:
    """BERT's scores [1, heads, s, s]: the slabs cut the heads, the lhs and rhs alike."""
    rng = np.random.default_rng(4)
    q, k = (rng.standard_normal((1, 256, 8, 64)).astype(np.float32) for _ in range(2))
    text = ATTENTION_SCORES.replace("f32[4,", "f32[1,")
    one = _run(text, [q, k], 1)[0]
    np.testing.assert_array_equal(_run(text, [q, k], 2)[0], one)
    np.testing.assert_allclose(one, np.einsum("bshd,bthd->bhst", q, k), rtol=1e-4, atol=1e-4)


MOVES = f"""\
module @m {{
  func @main(%x: f32[4,{N // 2},3], %b: f32[3]) -> (f32[{N // 2},4,3], f32[4,{N // 2},5],
                                                   f32[4,{N // 2},3]) {{
    %t = transpose(%x) {{permutation = [1, 0, 2]}} : f32[{N // 2},4,3]
    %zero = constant() {{value = splat<f32[]: 0.0>}} : f32[]
    %p = pad(%x, %zero) {{low = [0, 0, 2], high = [0, 0, 0], interior = [0, 0, 0]}} : f32[4,{N // 2},5]
    %bb = broadcast_in_dim(%b) {{shape = [4, {N // 2}, 3], broadcast_dimensions = [2]}} : f32[4,{N // 2},3]
    return %t, %p, %bb
  }}
}}
"""


def test_transposes_pads_and_broadcasts_split_with_the_same_values() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, N // 2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    one = _run(MOVES, [x, b], 1)
    for a, c in zip(one, _run(MOVES, [x, b], 2), strict=True):
        np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(one[0], x.transpose(1, 0, 2))
    np.testing.assert_array_equal(one[1], np.pad(x, ((0, 0), (0, 0), (2, 0))))
    np.testing.assert_array_equal(one[2], np.broadcast_to(b, x.shape))


MAX_POOL = """\
module @m {
  func @main(%x: f32[2,64,47,47]) -> (f32[2,64,23,23]) {
    %init = constant() {value = splat<f32[]: -inf>} : f32[]
    %p = reduce_window(%x, %init) {window_dimensions = [1, 1, 3, 3], window_strides = [1, 1, 2, 2], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding = [[0, 0], [0, 0], [0, 0], [0, 0]], computation = @max_f32} : f32[2,64,23,23]
    return %p
  }
  func @max_f32(%a: f32[], %b: f32[]) -> (f32[]) {
    %c = maximum(%a, %b) : f32[]
    return %c
  }
}
"""


@pytest.mark.parametrize("batch", [2, 1])
def test_a_max_pool_splits_along_a_dimension_it_does_not_pool(batch: int) -> None:
    text = MAX_POOL.replace("f32[2,", f"f32[{batch},")
    x = np.random.default_rng(10).standard_normal((batch, 64, 47, 47)).astype(np.float32)
    one = _run(text, [x], 1)[0]
    np.testing.assert_array_equal(_run(text, [x], 2)[0], one)
    want = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_array_equal(one, want.max(axis=(4, 5)))


def test_a_padded_max_pool_splits_too() -> None:
    """ResNet's 3x3 / 2 pool padded by one: planned without padding, so split as well."""
    text = MAX_POOL.replace("[2,64,47,47]", "[1,64,48,48]").replace("f32[2,64,23,23]",
                                                                    "f32[1,64,24,24]")
    text = text.replace("[0, 0], [0, 0]]", "[1, 1], [1, 1]]")
    x = np.random.default_rng(11).standard_normal((1, 64, 48, 48)).astype(np.float32)
    one = _run(text, [x], 1)[0]
    np.testing.assert_array_equal(_run(text, [x], 2)[0], one)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_array_equal(one, want.max(axis=(4, 5)))


SUM_POOL = """\
module @m {
  func @main(%x: f32[1,128,48,48]) -> (f32[1,128,24,24]) {
    %init = constant() {value = splat<f32[]: 0.0>} : f32[]
    %p = reduce_window(%x, %init) {window_dimensions = [1, 1, 2, 2], window_strides = [1, 1, 2, 2], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding = [[0, 0], [0, 0], [0, 0], [0, 0]], computation = @add_f32} : f32[1,128,24,24]
    return %p
  }
  func @add_f32(%a: f32[], %b: f32[]) -> (f32[]) {
    %c = add(%a, %b) : f32[]
    return %c
  }
}
"""


def test_a_sum_pool_splits_with_the_kernels_order() -> None:
    """An average pool's 2x2 / 2 sum: planned, split along the channels, the same bits as
    unsplit, which are the offsets added in turn."""
    x = np.random.default_rng(12).standard_normal((1, 128, 48, 48)).astype(np.float32)
    one = _run(SUM_POOL, [x], 1)[0]
    np.testing.assert_array_equal(_run(SUM_POOL, [x], 2)[0], one)
    want = ((np.float32(0) + x[:, :, 0::2, 0::2]) + x[:, :, 0::2, 1::2]
            + x[:, :, 1::2, 0::2]) + x[:, :, 1::2, 1::2]
    np.testing.assert_array_equal(one, want)
