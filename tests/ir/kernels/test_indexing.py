"""dynamic_slice, dynamic_update_slice, gather and scatter against naive spec references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nxcc.ir import Builder, DType, Module, Value
from nxcc.ir.computations import binary_computation
from tests.ir.kernels.fake_ctx import FakeCtx, run1, run_op, scalar_function

RNG = np.random.default_rng(7)


def test_dynamic_slice_clamps() -> None:
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    s = [np.array(v, np.int32) for v in (2, -3)]
    got = run1("dynamic_slice", [x, *s], {"slice_sizes": (3, 2)})
    np.testing.assert_array_equal(got, x[1:4, 0:2])
    s = [np.array(v, np.uint8) for v in (0, 200)]
    got = run1("dynamic_slice", [x, *s], {"slice_sizes": (2, 2)})
    np.testing.assert_array_equal(got, x[0:2, 3:5])


def test_dynamic_update_slice_clamps() -> None:
    x = np.zeros((4, 5), np.float32)
    u = np.ones((2, 3), np.float32)
    got = run1("dynamic_update_slice", [x, u, np.array(3, np.int64), np.array(-1, np.int64)])
    want = x.copy()
    want[2:4, 0:3] = 1
    np.testing.assert_array_equal(got, want)


def naive_gather(operand, indices, offset_dims, collapsed, start_index_map, ivd, sizes,
                 operand_batching=(), indices_batching=()):
    idx = indices if ivd < indices.ndim else indices[..., None]
    batch_shape = [n for d, n in enumerate(idx.shape) if d != ivd]
    offset_operand = [d for d in range(operand.ndim)
                      if d not in collapsed and d not in operand_batching]
    rank = len(batch_shape) + len(offset_operand)
    out_shape, bi, oi = [], iter(batch_shape), iter(sizes[d] for d in offset_operand)
    for d in range(rank):
        out_shape.append(next(oi) if d in offset_dims else next(bi))
    out = np.zeros(out_shape, operand.dtype)
    for o in itertools.product(*(range(n) for n in out_shape)):
        batch = [o[d] for d in range(rank) if d not in offset_dims]
        offs = [o[d] for d in sorted(offset_dims)]
        full = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            vec = list(batch)
            vec.insert(ivd, k)
            start = int(idx[tuple(vec)])
            full[d] = min(max(start, 0), operand.shape[d] - sizes[d])
        for od, sd in zip(operand_batching, indices_batching, strict=True):
            full[od] = batch[sd if sd < ivd else sd - 1]
        for d, off in zip(offset_operand, offs, strict=True):
            full[d] += off
        out[o] = operand[tuple(full)]
    return out


def _gather(operand, indices, **attrs):
    full = {"operand_batching_dims": (), "start_indices_batching_dims": (), **attrs}
    got = run1("gather", [operand, indices], full)
    want = naive_gather(operand, indices, full["offset_dims"], full["collapsed_slice_dims"],
                        full["start_index_map"], full["index_vector_dim"], full["slice_sizes"],
                        full["operand_batching_dims"], full["start_indices_batching_dims"])
    np.testing.assert_array_equal(got, want)
    return got


def test_gather_as_take() -> None:
    x = RNG.normal(size=(6, 4)).astype(np.float32)
    idx = np.array([[0, 5], [2, 2], [3, 1]], np.int32)
    got = _gather(x, idx, offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
                  index_vector_dim=2, slice_sizes=(1, 4))
    np.testing.assert_array_equal(got, np.take(x, idx, axis=0))
    got = _gather(x, np.array([3, 0, 3], np.int64), offset_dims=(0,),
                  collapsed_slice_dims=(1,), start_index_map=(1,), index_vector_dim=1,
                  slice_sizes=(6, 1))
    np.testing.assert_array_equal(got, np.take(x, [3, 0, 3], axis=1))


def test_gather_2d_points_and_clamping() -> None:
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    idx = np.array([[0, 1], [4, 5], [2, 3], [9, -4]], np.int32)
    got = _gather(x, idx, offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1),
                  index_vector_dim=1, slice_sizes=(1, 1))
    np.testing.assert_array_equal(got, [1, 29, 15, 24])


def test_gather_windows_index_vector_first() -> None:
    x = RNG.normal(size=(5, 6, 3))
    idx = np.array([[1, 4, 0], [2, 5, 1]], np.int32)  # ivd = 0: three starts (rows, cols)
    _gather(x, idx, offset_dims=(1, 2), collapsed_slice_dims=(2,), start_index_map=(0, 1),
            index_vector_dim=0, slice_sizes=(2, 3, 1))
    # start_index_map touches dim 2 too, offset dims placed first
    idx2 = RNG.integers(-2, 7, (4, 2, 3)).astype(np.int32)
    _gather(x, idx2, offset_dims=(0, 3), collapsed_slice_dims=(1,), start_index_map=(2, 1, 0),
            index_vector_dim=2, slice_sizes=(2, 1, 2))


def test_gather_of_one_index_vector() -> None:
    """Indices that are one index vector (batch shape ()): jnp.quantile's row pick."""
    x = RNG.normal(size=(9, 7)).astype(np.float32)
    got = _gather(x, np.array([4], np.int32), offset_dims=(0,), collapsed_slice_dims=(0,),
                  start_index_map=(0,), index_vector_dim=0, slice_sizes=(1, 7))
    np.testing.assert_array_equal(got, x[4])


def test_gather_batching_dims() -> None:
    x = RNG.normal(size=(3, 7, 2))
    idx = RNG.integers(0, 7, (2, 3, 1)).astype(np.int32)
    _gather(x, idx, offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
            index_vector_dim=2, slice_sizes=(1, 1, 2), operand_batching_dims=(0,),
            start_indices_batching_dims=(1,))


def naive_scatter(inputs, indices, updates, comb, update_window_dims, inserted, sdod, ivd,
                  input_batching=(), indices_batching=()):
    outs = [x.copy() for x in inputs]
    idx = indices if ivd < indices.ndim else indices[..., None]
    u0 = updates[0]
    scatter_dims = [d for d in range(u0.ndim) if d not in update_window_dims]
    window_operand = [d for d in range(outs[0].ndim)
                      if d not in inserted and d not in input_batching]
    wsize = [1] * outs[0].ndim
    for d, ud in zip(window_operand, update_window_dims, strict=True):
        wsize[d] = u0.shape[ud]
    for u in itertools.product(*(range(n) for n in u0.shape)):
        batch = [u[d] for d in scatter_dims]
        win = [u[d] for d in update_window_dims]
        start = [0] * outs[0].ndim
        for k, d in enumerate(sdod):
            vec = list(batch)
            vec.insert(ivd, k)
            start[d] = int(idx[tuple(vec)])
        for od, sd in zip(input_batching, indices_batching, strict=True):
            start[od] = batch[sd if sd < ivd else sd - 1]
        if any(s < 0 or s + w > n for s, w, n in zip(start, wsize, outs[0].shape, strict=True)):
            continue
        full = list(start)
        for d, w in zip(window_operand, win, strict=True):
            full[d] += w
        pos = tuple(full)
        new = comb(*[o[pos] for o in outs], *[up[u] for up in updates])
        for o, v in zip(outs, new, strict=True):
            o[pos] = v
    return outs


def _slow_add(module: Module, dtype: DType) -> str:
    def body(b: Builder, p: list[Value]) -> list[Value]:
        return [b.subtract(p[0], b.negate(p[1]))]
    return scalar_function(module, "slow_add", [dtype, dtype], body)


def _replace(module: Module, dtype: DType) -> str:
    return scalar_function(module, "replace", [dtype, dtype], lambda b, p: [p[1]])


@pytest.mark.parametrize("kind", ["add", "slow_add", "max"])
def test_scatter_add_duplicates(kind: str) -> None:
    module = Module("m")
    comp = {"add": lambda: binary_computation(module, "add", DType.F64),
            "max": lambda: binary_computation(module, "maximum", DType.F64),
            "slow_add": lambda: _slow_add(module, DType.F64)}[kind]()
    x = RNG.normal(size=(5, 3))
    idx = np.array([[1], [3], [1], [1], [0], [3], [7], [-1]], np.int32)
    upd = RNG.normal(size=(8, 3))
    ctx = FakeCtx(module)
    (got,) = run_op("scatter", [x, idx, upd], {
        "update_window_dims": (1,), "inserted_window_dims": (0,),
        "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1, "computation": comp},
        module, ctx)
    fn = (lambda a, b: (max(a, b),)) if kind == "max" else (lambda a, b: (a + b,))
    (want,) = naive_scatter([x], idx, [upd], fn, (1,), (0,), (0,), 1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if kind == "slow_add":
        assert len(ctx.calls) <= 4  # log2(3 duplicates) levels + the final combine


def test_scatter_replace_last_wins_and_window_oob_skipped() -> None:
    module = Module("m")
    comp = _replace(module, DType.S32)
    x = np.zeros((4, 6), np.int32)
    idx = np.array([[0, 0], [2, 4], [0, 0], [3, 1], [1, 5]], np.int32)  # last two don't fit
    upd = np.arange(5 * 2 * 2, dtype=np.int32).reshape(5, 2, 2) + 1
    (got,) = run_op("scatter", [x, idx, upd], {
        "update_window_dims": (1, 2), "inserted_window_dims": (),
        "scatter_dims_to_operand_dims": (0, 1), "index_vector_dim": 1, "computation": comp},
        module)
    (want,) = naive_scatter([x], idx, [upd], lambda a, b: (b,), (1, 2), (), (0, 1), 1)
    np.testing.assert_array_equal(got, want)
    assert got[0, 0] == upd[2, 0, 0]


def test_scatter_of_one_index_vector() -> None:
    """Indices that are one index vector (batch shape ()): one update window."""
    module = Module("m")
    comp = binary_computation(module, "add", DType.F64)
    x = RNG.normal(size=(5, 3))
    upd = RNG.normal(size=(3,))
    (got,) = run_op("scatter", [x, np.array([2], np.int32), upd], {
        "update_window_dims": (0,), "inserted_window_dims": (0,),
        "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 0, "computation": comp},
        module)
    want = x.copy()
    want[2] += upd
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_scatter_variadic_general() -> None:
    module = Module("m")

    def body(b: Builder, p: list[Value]) -> list[Value]:
        av, ai, bv, bi = p  # keep the larger value and its index; ties: smaller index
        gt = b.compare(av, bv, direction="GT")
        eq = b.compare(av, bv, direction="EQ")
        take_a = b.op("or", [gt, b.op("and", [eq, b.compare(ai, bi, direction="LT")])])
        return [b.select(take_a, av, bv), b.select(take_a, ai, bi)]

    comp = scalar_function(module, "argmax", [DType.F32, DType.S32] * 2, body)
    vals = np.full((4,), -np.inf, np.float32)
    inds = np.full((4,), -1, np.int32)
    idx = RNG.integers(0, 4, (20, 1)).astype(np.int32)
    uv = RNG.integers(0, 3, 20).astype(np.float32)
    ui = np.arange(20, dtype=np.int32)
    got_v, got_i = run_op("scatter", [vals, inds, idx, uv, ui], {
        "update_window_dims": (), "inserted_window_dims": (0,),
        "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1, "computation": comp},
        module)

    def comb(av, ai, bv, bi):
        take_a = av > bv or (av == bv and ai < bi)
        return (av, ai) if take_a else (bv, bi)

    want_v, want_i = naive_scatter([vals, inds], idx, [uv, ui], comb, (), (0,), (0,), 1)
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(got_i, want_i)


def test_scatter_batching_dims_and_int_add() -> None:
    module = Module("m")
    comp = binary_computation(module, "add", DType.S32)
    x = np.zeros((2, 5), np.int32)
    idx = RNG.integers(0, 5, (2, 6)).astype(np.int32)  # per batch row, 6 scalar indices
    upd = RNG.integers(1, 9, (2, 6)).astype(np.int32)
    (got,) = run_op("scatter", [x, idx, upd], {
        "update_window_dims": (), "inserted_window_dims": (1,),
        "input_batching_dims": (0,), "scatter_indices_batching_dims": (0,),
        "scatter_dims_to_operand_dims": (1,), "index_vector_dim": 2, "computation": comp},
        module)
    want = np.zeros((2, 5), np.int32)
    for r in range(2):
        np.add.at(want[r], idx[r], upd[r])
    np.testing.assert_array_equal(got, want)
