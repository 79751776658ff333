"""Lowering of the opcodes the fixtures do not exercise, checked by running the IR (or, for
collectives, by the placeholder ops and their replica groups)."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.compiler.hlo import SUPPORTED_OPCODES, HloError, import_hlo
from nxcc.ir.core import Module
from nxcc.ir.interpreter import IRContext
from nxcc.ir.verifier import verify_module

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"


def module(body: str, params: str = "", extra: str = "") -> Module:
    m = import_hlo(f"HloModule t\n{ADD}{extra}\nENTRY main {{\n{params}{body}\n}}\n", "t.hlo")
    verify_module(m)
    return m


def run(m: Module, *args: np.ndarray) -> list[np.ndarray]:
    return IRContext(m).call(m.entry, list(args))


def ops(m: Module) -> list[str]:
    return [op.opcode for fn in m.functions.values() for op in fn.body]


def test_supported_opcodes_cover_the_issue() -> None:
    wanted = """abs add and atan2 cbrt ceil clz? compare select clamp convert bitcast-convert
        broadcast reshape transpose slice dynamic-slice dynamic-update-slice pad concatenate
        reverse iota constant dot convolution reduce reduce-window select-and-scatter gather
        scatter sort tuple get-tuple-element call fusion while conditional map
        rng-bit-generator partition-id replica-id custom-call all-reduce all-gather
        reduce-scatter all-to-all collective-permute all-reduce-start all-reduce-done
        all-gather-start all-gather-done collective-permute-start collective-permute-done
        exponential log tanh logistic sqrt rsqrt negate sign floor round-nearest-even
        round-nearest-afz not popcnt count-leading-zeros is-finite remainder power maximum
        minimum or xor shift-left shift-right-arithmetic shift-right-logical subtract multiply
        divide sine cosine tan erf exponential-minus-one log-plus-one bitcast copy
        parameter""".split()
    missing = [w for w in wanted if w.rstrip("?") not in SUPPORTED_OPCODES and "?" not in w]
    assert not missing


def test_elementwise_zoo() -> None:
    m = module(
        "  p = f32[5]{0} parameter(0)\n  q = s32[5]{0} parameter(1)\n"
        "  a = f32[5]{0} atan2(p, p)\n  r = f32[5]{0} remainder(p, p)\n"
        "  c = f32[5]{0} cbrt(p)\n  e = f32[5]{0} exponential-minus-one(p)\n"
        "  pc = s32[5]{0} popcnt(q)\n  cl = s32[5]{0} count-leading-zeros(q)\n"
        "  sh = s32[5]{0} shift-right-arithmetic(q, q)\n  fin = pred[5]{0} is-finite(p)\n"
        "  rn = f32[5]{0} round-nearest-even(p)\n  ra = f32[5]{0} round-nearest-afz(p)\n"
        "  ROOT t = (f32[5]{0}, f32[5]{0}, f32[5]{0}, f32[5]{0}, s32[5]{0}, s32[5]{0}, "
        "s32[5]{0}, pred[5]{0}, f32[5]{0}, f32[5]{0}) tuple(a, r, c, e, pc, cl, sh, fin, rn, ra)")
    p = np.array([0.5, -2.5, 3.0, 1.5, -0.5], np.float32)
    q = np.array([1, 7, 0, 3, 2], np.int32)
    a, r, c, e, pc, cl, sh, fin, rn, ra = run(m, p, q)
    np.testing.assert_allclose(a, np.arctan2(p, p), rtol=1e-6)
    np.testing.assert_allclose(c, np.cbrt(p), rtol=1e-6)
    np.testing.assert_allclose(e, np.expm1(p), rtol=1e-6)
    np.testing.assert_array_equal(pc, [1, 3, 0, 2, 1])
    np.testing.assert_array_equal(cl, [31, 29, 32, 30, 30])
    np.testing.assert_array_equal(sh, q >> q)
    assert fin.all() and (r == 0).all()
    np.testing.assert_array_equal(rn, [0, -2, 3, 2, -0])
    np.testing.assert_array_equal(ra, [1, -3, 3, 2, -1])


def test_compare_total_order_and_unsigned_type() -> None:
    m = module("  p = f32[4]{0} parameter(0)\n  q = f32[4]{0} parameter(1)\n"
               "  ROOT c = pred[4]{0} compare(p, q), direction=LT, type=TOTALORDER")
    p = np.array([-0.0, np.nan, -np.nan, 1.0], np.float32)
    q = np.array([0.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(run(m, p, q)[0], [True, False, True, True])
    m = module("  p = s32[2]{0} parameter(0)\n  q = s32[2]{0} parameter(1)\n"
               "  ROOT c = pred[2]{0} compare(p, q), direction=LT, type=UNSIGNED")
    np.testing.assert_array_equal(run(m, np.array([-1, 1], np.int32),
                                      np.array([1, 2], np.int32))[0], [False, True])


def test_pad_reverse_dynamic_update_slice_clamp() -> None:
    m = module(
        "  x = f32[2,3]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
        "  p = f32[4,7]{1,0} pad(x, z), padding=1_1x0_2_1\n"
        "  r = f32[2,3]{1,0} reverse(x), dimensions={0,1}\n"
        "  i = s32[] constant(1)\n  u = f32[1,2]{1,0} constant({{9, 8}})\n"
        "  d = f32[2,3]{1,0} dynamic-update-slice(x, u, i, i)\n"
        "  lo = f32[] constant(-1)\n  hi = f32[] constant(1)\n"
        "  c = f32[2,3]{1,0} clamp(lo, x, hi)\n"
        "  ROOT t = (f32[4,7]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}) "
        "tuple(p, r, d, c)")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    p, r, d, c = run(m, x)
    want = np.zeros((4, 7), np.float32)
    want[1:3, 0:5:2] = x
    np.testing.assert_array_equal(p, want)
    np.testing.assert_array_equal(r, x[::-1, ::-1])
    np.testing.assert_array_equal(d, np.where([[0, 0, 0], [0, 1, 1]], [[0, 0, 0], [0, 9, 8]],
                                              x))
    np.testing.assert_array_equal(c, np.clip(x, -1, 1))


def test_select_and_scatter_is_max_pool_gradient() -> None:
    ge = "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n" \
         "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
    m = module("  x = f32[4,4]{1,0} parameter(0)\n  s = f32[2,2]{1,0} parameter(1)\n"
               "  z = f32[] constant(0)\n"
               "  ROOT g = f32[4,4]{1,0} select-and-scatter(x, s, z), "
               "window={size=2x2 stride=2x2}, select=ge, scatter=add", extra=ge)
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    s = np.array([[1, 2], [3, 4]], np.float32)
    want = np.zeros((4, 4), np.float32)
    for i in range(2):
        for j in range(2):
            w = x[2 * i:2 * i + 2, 2 * j:2 * j + 2]
            a, b = np.unravel_index(np.argmax(w), (2, 2))
            want[2 * i + a, 2 * j + b] = s[i, j]
    np.testing.assert_array_equal(run(m, x, s)[0], want)


def test_map_applies_its_computation_elementwise() -> None:
    fma = "fma {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n" \
          "  two = f32[] constant(2)\n  m = f32[] multiply(a, two)\n" \
          "  ROOT s = f32[] add(m, b)\n}\n"
    m = module("  x = f32[3]{0} parameter(0)\n  y = f32[3]{0} parameter(1)\n"
               "  ROOT r = f32[3]{0} map(x, y), dimensions={0}, to_apply=fma", extra=fma)
    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    np.testing.assert_array_equal(run(m, x, y)[0], 2 * x + y)


def test_conditional_with_branch_index_out_of_range_runs_the_last_branch() -> None:
    branches = "".join(
        f"b{i} {{\n  p{i} = f32[2]{{0}} parameter(0)\n  k{i} = f32[] constant({i + 1})\n"
        f"  bk{i} = f32[2]{{0}} broadcast(k{i}), dimensions={{}}\n"
        f"  ROOT o{i} = f32[2]{{0}} multiply(p{i}, bk{i})\n}}\n" for i in range(3))
    m = module("  i = s32[] parameter(0)\n  x = f32[2]{0} parameter(1)\n"
               "  ROOT c = f32[2]{0} conditional(i, x, x, x), branch_computations={b0, b1, b2}",
               extra=branches)
    x = np.array([1, 2], np.float32)
    for index, factor in ((0, 1), (1, 2), (2, 3), (7, 3), (-1, 3)):
        np.testing.assert_array_equal(run(m, np.int32(index), x)[0], factor * x)


def test_custom_calls_topk_and_unknown_target() -> None:
    m = module("  x = f32[2,5]{1,0} parameter(0)\n"
               '  s = f32[2,5]{1,0} custom-call(x), custom_call_target="Sharding", '
               "sharding={devices=[2,1]0,1}\n"
               '  ROOT t = (f32[2,2]{1,0}, s32[2,2]{1,0}) custom-call(s), '
               'custom_call_target="TopK"')
    x = np.array([[1, 5, 3, 5, 0], [2, 1, 9, 4, 8]], np.float32)
    values, indices = run(m, x)
    np.testing.assert_array_equal(values, [[5, 5], [9, 8]])
    np.testing.assert_array_equal(indices, [[1, 3], [2, 4]])
    with pytest.raises(HloError) as info:
        module("  x = f32[2]{0} parameter(0)\n"
               '  ROOT y = f32[2]{0} custom-call(x), custom_call_target="cublas$gemm"')
    assert info.value.code == "NCC_EHCA005" and "'cublas$gemm'" in info.value.message


def test_reduce_precision_rounds_like_bf16() -> None:
    m = module("  x = f32[2]{0} parameter(0)\n"
               "  ROOT r = f32[2]{0} reduce-precision(x), exponent_bits=8, mantissa_bits=7")
    x = np.array([1.0 + 2**-9, 3.14159], np.float32)
    import ml_dtypes
    np.testing.assert_array_equal(run(m, x)[0],
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))


COLLECTIVES = """
  x = f32[4,8]{1,0} parameter(0)
  ar = f32[4,8]{1,0} all-reduce(x), channel_id=1, replica_groups={{0,1},{2,3}}, to_apply=add
  ag = f32[8,8]{1,0} all-gather(x), dimensions={0}, replica_groups=[2,2]<=[4]
  rs = f32[4,4]{1,0} reduce-scatter(x), dimensions={1}, replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add
  a2a = f32[4,8]{1,0} all-to-all(x), dimensions={1}, replica_groups=@mesh<a=2,b=2> {b}
  cp = f32[4,8]{1,0} collective-permute(x), source_target_pairs={{0,1},{1,0}}
  ars = f32[4,8]{1,0} all-reduce-start(x), replica_groups={}, to_apply=add
  ard = f32[4,8]{1,0} all-reduce-done(ars)
  ags = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-gather-start(x), dimensions={0}, replica_groups={}
  agd = f32[8,8]{1,0} all-gather-done(ags)
  cps = (f32[4,8]{1,0}, f32[4,8]{1,0}, u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1}}
  cpd = f32[4,8]{1,0} collective-permute-done(cps)
  pid = u32[] partition-id()
  rid = u32[] replica-id()
  ROOT t = (f32[4,8]{1,0}, f32[8,8]{1,0}, f32[4,4]{1,0}, f32[4,8]{1,0}, f32[4,8]{1,0}, f32[4,8]{1,0}, f32[8,8]{1,0}, f32[4,8]{1,0}, u32[], u32[]) tuple(ar, ag, rs, a2a, cp, ard, agd, cpd, pid, rid)"""


def test_collectives_become_placeholders_with_their_groups() -> None:
    m = module(COLLECTIVES)
    body = {op.opcode: op for op in m.entry_function.body}
    got = [op.opcode for op in m.entry_function.body]
    assert got.count("all_reduce") == 1 and got.count("all_gather") == 1
    assert got.count("collective_permute") == 1
    # the -start/-done pairs lower to the IR's start/done, the done reading the start's context
    for kind in ("all_reduce", "all_gather", "collective_permute"):
        assert got.count(f"{kind}_start") == 1 and got.count(f"{kind}_done") == 1
        assert body[f"{kind}_done"].operands[0] is body[f"{kind}_start"].results[0]
    assert body["all_gather_done"].results[0].type.shape == (8, 8)
    assert body["all_gather_start"].attrs["dimension"] == 0
    assert body["collective_permute_start"].attrs["source_target_pairs"] == ((0, 1),)
    ar = next(op for op in m.entry_function.body if op.opcode == "all_reduce")
    assert ar.attrs["reduction"] == "sum" and ar.attrs["replica_groups"] == ((0, 1), (2, 3))
    assert ar.attrs["channel_id"] == 1
    assert body["all_gather_start"].attrs["replica_groups"] == ((0, 1),)  # from the shapes
    assert body["reduce_scatter"].attrs["replica_groups"] == ((0, 2), (1, 3))
    assert body["all_to_all"].attrs["replica_groups"] == ((0, 1), (2, 3))
    assert body["collective_permute"].attrs["source_target_pairs"] == ((0, 1), (1, 0))
    assert {"partition_id", "replica_id"} <= set(got)


def test_rng_with_an_unknown_algorithm_is_refused() -> None:
    with pytest.raises(HloError) as info:
        module("  s = u64[2]{0} parameter(0)\n"
               "  ROOT r = (u64[2]{0}, u32[4]{0}) rng-bit-generator(s), algorithm=rng_magic")
    assert info.value.code == "NCC_EUOC003" and "rng_magic" in info.value.message


def test_unsupported_opcode_names_it() -> None:
    with pytest.raises(HloError) as info:
        module("  x = f32[8]{0} parameter(0)\n  ROOT y = f32[8]{0} fft(x), fft_type=FFT, "
               "fft_length={8}")
    assert info.value.code == "NCC_EUOC002" and "'fft'" in info.value.message


def test_dead_instructions_are_not_lowered_and_order_does_not_matter() -> None:
    m = module("  ROOT y = f32[2]{0} add(x, x)\n  x = f32[2]{0} parameter(0)\n"
               "  dead = f32[2]{0} fft(x), fft_type=FFT, fft_length={2}")
    assert ops(m) == ["add"]  # unused computations (the @add here) are not lowered either
    np.testing.assert_array_equal(run(m, np.ones(2, np.float32))[0], [2, 2])
