"""Where a view's elements lie in its root buffer: a byte offset and byte strides.

The memory plan makes a `reshape` or a `slice` of a planned value a view of that value's
buffer when numpy can read it in place (`backend/program/memory_plan.py`). `sliced` and
`reshaped` give the layout of such a view from its operand's layout, or None when there
is none (a reshape of a strided view that would need a copy). A layout is C-contiguous
when `contiguous_strides` of its shape are its strides (the slot then needs no strides).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

Layout = tuple[int, tuple[int, ...]]  # (byte offset in the root buffer, byte strides)


def contiguous_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The row-major byte strides of `shape`."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """Elements at `strides` lie as a C-contiguous array of `shape` has them (a stride
    along a dimension of size 1 never matters)."""
    return all(n == 1 or st == c for n, st, c in
               zip(shape, strides, contiguous_strides(shape, itemsize), strict=True))


def sliced(layout: Layout, starts: Sequence[int], steps: Sequence[int]) -> Layout:
    """The layout of x[start::step, ...] (positive steps) for x of `layout`."""
    offset, strides = layout
    offset += sum(s * st for s, st in zip(starts, strides, strict=True))
    return offset, tuple(st * k for st, k in zip(strides, steps, strict=True))


def reshaped(layout: Layout, shape: Sequence[int], new_shape: Sequence[int]) -> Layout | None:
    """The layout of x reshaped (row-major) to `new_shape`, for x of `shape` and `layout`
    (neither empty), if the elements can be read in place; else None. numpy's rule: each
    group of old dimensions whose product is a group of new dimensions must be contiguous
    within itself (size-1 dimensions placed anywhere)."""
    offset, strides = layout
    old = [(n, st) for n, st in zip(shape, strides, strict=True) if n != 1]
    new = list(new_shape)
    out = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        oj, nj = oi + 1, ni + 1
        size_old, size_new = old[oi][0], new[ni]
        while size_old != size_new:
            if size_new < size_old:
                size_new *= new[nj]
                nj += 1
            else:
                size_old *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the old group must be contiguous within itself
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        oi, ni = oj, nj
    last = out[ni - 1] if ni > 0 else (old[-1][1] if old else 0)
    for k in range(ni, len(new)):  # trailing size-1 dimensions
        out[k] = last
    return offset, tuple(out)


def view_sources(slots: Sequence[dict], i: int) -> Iterator[int]:
    """The slots that slot i views through its program's ``view_of`` links, nearest first
    (none when i is no view); a link that is no slot index ends the walk, as does a cycle
    (at most len(slots) steps)."""
    for _ in range(len(slots)):
        source = slots[i].get("view_of") if 0 <= i < len(slots) else None
        if (not isinstance(source, int) or isinstance(source, bool)
                or not 0 <= source < len(slots)):
            return
        yield source
        i = source
