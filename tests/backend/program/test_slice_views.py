"""Slices of planned values are views of their operand's buffer (`memory_plan`): no
instruction, a strided slot where they are not contiguous, reshapes of them views too
where numpy's rule allows; the program gives numpy's results, also when it returns a view
and reports its results as they become final."""

from __future__ import annotations

import numpy as np

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.ir.parser import parse_module

RNG = np.random.default_rng(11)

# GPT-2's attention input: one projection [1, 4, 24] sliced into query, key and value along
# its last dimension, each reshaped into heads [1, 4, 2, 4]; a strided slice (every other
# row) returned as it is; reshapes of a strided slice: one numpy cannot view (its rows
# merged), one it can (a size-1 dimension dropped).
QKV = """\
module @m {
  func @main(%x: f32[1,4,6], %w: f32[6,24]) -> (f32[1,2,4,4], f32[1,2,8], f32[32], f32[4,8], f32[1,4,8]) {
    %p = dot_general(%x, %w) {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : f32[1,4,24]
    %q = slice(%p) {start_indices = [0, 0, 0], limit_indices = [1, 4, 8], strides = [1, 1, 1]} : f32[1,4,8]
    %k = slice(%p) {start_indices = [0, 0, 8], limit_indices = [1, 4, 16], strides = [1, 1, 1]} : f32[1,4,8]
    %v = slice(%p) {start_indices = [0, 0, 16], limit_indices = [1, 4, 24], strides = [1, 1, 1]} : f32[1,4,8]
    %qh = reshape(%q) {shape = [1, 4, 2, 4]} : f32[1,4,2,4]
    %kh = reshape(%k) {shape = [1, 4, 2, 4]} : f32[1,4,2,4]
    %s = dot_general(%qh, %kh) {lhs_batch_dims = [0, 2], rhs_batch_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : f32[1,2,4,4]
    %odd = slice(%v) {start_indices = [0, 1, 0], limit_indices = [1, 4, 8], strides = [1, 2, 1]} : f32[1,2,8]
    %flat = reshape(%k) {shape = [32]} : f32[32]
    %rows = reshape(%k) {shape = [4, 8]} : f32[4,8]
    %e = exp(%v) : f32[1,4,8]
    return %s, %odd, %flat, %rows, %e
  }
}
"""


def reference(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    p = x @ w
    q, k, v = p[..., :8], p[..., 8:16], p[..., 16:]
    qh, kh = q.reshape(1, 4, 2, 4), k.reshape(1, 4, 2, 4)
    s = np.einsum("bshd,bthd->bhst", qh, kh)
    return [s, v[:, 1::2], k.reshape(32), k.reshape(4, 8), np.exp(v)]


def program() -> dict:
    return lower_module(parse_module(QKV), WeightTable())


def test_slices_and_their_reshapes_are_views_without_instructions() -> None:
    fn = program()["functions"]["main"]
    ops = [ins["op"] for ins in fn["instructions"]]
    assert "slice" not in ops and ops.count("reshape") == 1, ops
    slots = fn["slots"]
    p = next(i for i, s in enumerate(slots) if s["shape"] == [1, 4, 24])
    views = {tuple(s["shape"]): s for s in slots if "view_of" in s}
    for start, s in zip((0, 32, 64), [x for x in slots if x.get("view_of") == p], strict=True):
        assert s["offset"] == slots[p]["offset"] + start  # 8 floats along the row
        assert s["strides"] == [384, 96, 4]  # rows of the projection: 24 floats apart
    assert views[(1, 4, 2, 4)]["strides"] == [384, 96, 16, 4]
    assert views[(1, 2, 8)]["strides"] == [384, 192, 4]  # every other row
    assert (32,) not in views  # merging strided rows needs a copy: an instruction
    assert views[(4, 8)]["strides"] == [96, 4]


def test_views_give_numpys_results_and_follow_new_inputs() -> None:
    ex = ProgramExecutor(program(), {})
    for _ in range(3):
        x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
        w = RNG.standard_normal((6, 24)).astype(np.float32)
        for got, want in zip(ex.run([x, w]), reference(x, w), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            assert got.flags.c_contiguous  # results are fresh arrays


def test_a_returned_view_is_reported_once_its_buffer_is_written() -> None:
    ex = ProgramExecutor(program(), {})
    x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
    w = RNG.standard_normal((6, 24)).astype(np.float32)
    reported: dict[int, np.ndarray] = {}
    results = ex.run([x, w], on_result=lambda k, a: reported.setdefault(k, a))
    assert sorted(reported) == [0, 1, 2, 3, 4]
    for k, want in enumerate(reference(x, w)):
        np.testing.assert_allclose(reported[k], want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(reported[k], results[k])
