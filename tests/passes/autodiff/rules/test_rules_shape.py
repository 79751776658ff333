"""Property: gradient rules of the data-movement and indexing ops against finite differences."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from tests.passes.autodiff.gradcheck import check_gradients

SETTINGS = settings(max_examples=10, deadline=None)
seeds = st.integers(0, 2**16)
dims = st.integers(1, 4)


def _normal(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_broadcast_in_dim(data: st.DataObject, seed: int) -> None:
    out = tuple(data.draw(st.lists(dims, min_size=1, max_size=3)))
    kept = sorted(data.draw(st.sets(st.integers(0, len(out) - 1))))
    shape = tuple(data.draw(st.sampled_from([1, out[d]])) for d in kept)
    check_gradients(lambda b, p: b.broadcast_in_dim(p[0], shape=out,
                                                    broadcast_dimensions=tuple(kept)),
                    {"x": _normal(seed, shape)}, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_reshape_and_transpose(data: st.DataObject, seed: int) -> None:
    shape = tuple(data.draw(st.lists(dims, min_size=1, max_size=3)))
    perm = tuple(data.draw(st.permutations(range(len(shape)))))

    def build(b, p):
        t = b.transpose(p[0], permutation=perm)
        return b.reshape(t, (t.type.size,))

    check_gradients(build, {"x": _normal(seed, shape)}, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_slice(data: st.DataObject, seed: int) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    start = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    limit = tuple(data.draw(st.integers(s + 1, n)) for s, n in zip(start, shape, strict=True))
    strides = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    check_gradients(lambda b, p: b.slice(p[0], start_indices=start, limit_indices=limit,
                                         strides=strides), {"x": _normal(seed, shape)}, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_pad_with_cropping_and_interior(data: st.DataObject, seed: int) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    low = tuple(data.draw(st.integers(-1, 2)) for _ in shape)
    high = tuple(data.draw(st.integers(-1, 2)) for _ in shape)
    interior = tuple(data.draw(st.integers(0, 2)) for _ in shape)
    assume(all(lo + hi + n + (n - 1) * i >= 1
               for lo, hi, n, i in zip(low, high, shape, interior, strict=True)))
    inputs = {"x": _normal(seed, shape), "v": np.array(0.7)}
    check_gradients(lambda b, p: b.pad(p[0], p[1], low=low, high=high, interior=interior),
                    inputs, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_concatenate_and_reverse(data: st.DataObject, seed: int) -> None:
    shape = tuple(data.draw(st.lists(dims, min_size=1, max_size=3)))
    dim = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[dim] = data.draw(dims)
    inputs = {"x": _normal(seed, shape), "y": _normal(seed + 1, tuple(other))}
    check_gradients(lambda b, p: b.reverse(b.concatenate(*p, dimension=dim),
                                           dimensions=(dim,)), inputs, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_dynamic_slice_and_update(data: st.DataObject, seed: int) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=2)))
    sizes = tuple(data.draw(st.integers(1, n)) for n in shape)
    starts = [data.draw(st.integers(-1, n)) for n in shape]  # clamped like HLO
    inputs = {"x": _normal(seed, shape), "u": _normal(seed + 1, sizes)}

    def build(b, p):
        idx = [b.constant(np.int32(s)) for s in starts]
        updated = b.op("dynamic_update_slice", [p[0], b.tanh(p[1]), *idx])
        piece = b.op("dynamic_slice", [b.multiply(updated, updated), *idx],
                     {"slice_sizes": sizes})
        return b.add(piece, b.exp(p[1]))

    check_gradients(build, inputs, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_gather_rows_with_repeats(data: st.DataObject, seed: int) -> None:
    """An embedding lookup: repeated ids accumulate their cotangents."""
    vocab, dim = data.draw(st.integers(1, 5)), data.draw(dims)
    ids = np.array(data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=6)))
    inputs = {"table": _normal(seed, (vocab, dim))}

    def build(b, p):
        return b.gather(p[0], b.constant(ids.astype(np.int64)), offset_dims=(1,),
                        collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1,
                        slice_sizes=(1, dim))

    check_gradients(build, inputs, seed)


def test_reduce_sum_max_min() -> None:
    rng = np.random.default_rng(3)
    x = rng.permutation(24).reshape(2, 3, 4) * 0.1  # distinct: no ties

    def build(b, p):
        from nxcc.ir.computations import binary_computation
        out = []
        for opcode, init in (("add", 0.0), ("maximum", -np.inf), ("minimum", np.inf)):
            out.append(b.op("reduce", [b.tanh(p[0]), b.splat(init, TensorType(DType.F64, ()))],
                            {"dimensions": (0, 2),
                             "computation": binary_computation(b.module, opcode, DType.F64)}))
        return b.concatenate(*out, dimension=0)

    check_gradients(build, {"x": x})
