"""`view_layout`: the layout of a slice, and of a reshape where numpy would view rather
than copy, against numpy's own strided arrays."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.backend.program.view_layout import contiguous_strides, reshaped, sliced, view_sources


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@st.composite
def sliced_arrays(draw) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """(base, view, starts, steps): a random positive-step slice of a contiguous array."""
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    base = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    starts, steps, index = [], [], []
    for n in shape:
        start = draw(st.integers(0, n - 1))
        step = draw(st.integers(1, 3))
        count = draw(st.integers(1, len(range(start, n, step))))
        starts.append(start)
        steps.append(step)
        index.append(slice(start, start + (count - 1) * step + 1, step))
    return base, base[tuple(index)], starts, steps


def _factorizations(size: int) -> st.SearchStrategy[list[int]]:
    """Shapes of `size` elements, size-1 dimensions sprinkled in."""
    divisors = [d for d in range(2, size + 1) if size % d == 0]

    @st.composite
    def shapes(draw) -> list[int]:
        out, left = [], size
        while left > 1:
            d = draw(st.sampled_from([x for x in divisors if left % x == 0]))
            out.append(d)
            left //= d
        for _ in range(draw(st.integers(0, 2))):
            out.insert(draw(st.integers(0, len(out))), 1)
        return out or [1]

    return shapes()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_slices_and_reshapes_match_numpy(data) -> None:
    base, view, starts, steps = data.draw(sliced_arrays())
    layout = sliced((0, contiguous_strides(base.shape, 4)), starts, steps)
    assert layout == (_address(view) - _address(base), view.strides)
    new_shape = data.draw(_factorizations(view.size))
    got = reshaped(layout, view.shape, new_shape)
    want = view.reshape(new_shape)
    if np.shares_memory(want, base):  # numpy viewed: the same layout
        assert got == (_address(want) - _address(base), want.strides) or (
            got is not None and got[0] == _address(want) - _address(base)
            and all(n == 1 or a == b for n, a, b in zip(new_shape, got[1], want.strides,
                                                         strict=True)))
    if got is not None:  # whatever numpy did, the layout reads the reshaped elements
        read = np.lib.stride_tricks.as_strided(base.reshape(-1)[got[0] // 4:],
                                               shape=new_shape, strides=got[1])
        np.testing.assert_array_equal(read, want)
    else:
        assert not np.shares_memory(want, base)


def test_view_sources_walk_the_links_nearest_first() -> None:
    slots = [{}, {"view_of": 0}, {"view_of": 1}, {"view_of": 2}]
    assert list(view_sources(slots, 3)) == [2, 1, 0]
    assert list(view_sources(slots, 0)) == []
    assert list(view_sources(slots, 7)) == []  # no such slot


def test_view_sources_stop_at_a_link_that_is_no_slot_and_at_a_cycle() -> None:
    for bad in (9, -1, True, "0", 1.0, None):
        assert list(view_sources([{}, {"view_of": bad}], 1)) == []
    cycle = [{"view_of": 1}, {"view_of": 0}]
    assert len(list(view_sources(cycle, 0))) == len(cycle)  # bounded, not endless
