"""Attribute forms of windowed and sliced ops: `slice={[0:2], [1:5:2]}`, `window={size=3x3
stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`, `dim_labels=b01f_01io->b01f`
and `padding=0_0x1_1_0`. Each parser raises PieceError (message, offset in the text)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from nxcc.ir.sharding_notation.cursor import Cursor, PieceError, found


@dataclass(frozen=True)
class Window:
    """`window={size=.. stride=.. pad=lo_hi.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`,
    each field one entry per window dimension (defaults filled in)."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    pad: tuple[tuple[int, int], ...]
    lhs_dilate: tuple[int, ...]
    rhs_dilate: tuple[int, ...]
    rhs_reversal: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.size)


@dataclass(frozen=True)
class ConvDims:
    """`dim_labels=b01f_01io->b01f` as dimension numbers."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input: int
    kernel_output: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


def parse_slice(text: str) -> tuple[tuple[int, int, int], ...]:
    """`{[0:2], [1:5:2]}` -> ((start, limit, stride), ...)."""
    cur = Cursor(text)
    cur.expect("{", "'{' to start a slice")
    out: list[tuple[int, int, int]] = []
    if not cur.eat("}"):
        while True:
            cur.expect("[", "'[' to start a slice range like [0:2]")
            start = cur.int_("the start of a slice range")
            cur.expect(":", "':' in a slice range")
            limit = cur.int_("the limit of a slice range")
            stride = cur.int_("a slice stride") if cur.eat(":") else 1
            cur.expect("]", "']' or ':stride' to end a slice range")
            out.append((start, limit, stride))
            if cur.eat("}"):
                break
            cur.expect(",", "',' or '}' between slice ranges")
    cur.finish("the slice")
    return tuple(out)


def _x_list(cur: Cursor, what: str) -> list[str]:
    cur.ws()
    m = re.compile(r"[-\w]+").match(cur.text, cur.pos)
    if not m:
        raise cur.error(what)
    cur.pos = m.end()
    return m.group(0).split("x")


def _x_ints(cur: Cursor, what: str) -> tuple[int, ...]:
    at = cur.pos
    parts = _x_list(cur, what)
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise cur.error(what, at) from None


def parse_window(text: str) -> Window:
    """`{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}`."""
    cur = Cursor(text)
    cur.expect("{", "'{' to start a window")
    fields: dict[str, object] = {}
    rank: int | None = None
    while not cur.eat("}"):
        if cur.at_end():
            raise cur.error("'}' to close the window")
        at = cur.pos
        key = cur.word("a window field (size, stride, pad, lhs_dilate, rhs_dilate)")
        cur.expect("=", f"'=' after '{key}'")
        if key == "pad":
            pat = cur.pos
            pads = []
            for p in _x_list(cur, "padding like 0_1x0_1"):
                lo_hi = p.split("_")
                if len(lo_hi) != 2:
                    raise cur.error("padding like 0_1x0_1 (low_high per dimension)", pat)
                try:
                    pads.append((int(lo_hi[0]), int(lo_hi[1])))
                except ValueError:
                    raise cur.error("padding like 0_1x0_1", pat) from None
            value: object = tuple(pads)
        elif key in ("size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
            value = _x_ints(cur, f"window {key} like 3x3")
        else:
            raise PieceError(f"expected a window field (size, stride, pad, lhs_dilate, "
                             f"rhs_dilate, rhs_reversal), found {key!r}", at)
        n = len(value)  # type: ignore[arg-type]
        if rank is not None and n != rank:
            raise PieceError(f"window {key} has {n} dimensions, expected {rank}", at)
        rank = n
        fields[key] = value
    cur.finish("the window")
    if rank is None:
        rank = 0
    if "size" not in fields and rank:
        raise PieceError("expected 'size=' in the window", 0)
    one = (1,) * rank
    return Window(
        size=fields.get("size", ()),  # type: ignore[arg-type]
        stride=fields.get("stride", one),  # type: ignore[arg-type]
        pad=fields.get("pad", ((0, 0),) * rank),  # type: ignore[arg-type]
        lhs_dilate=fields.get("lhs_dilate", one),  # type: ignore[arg-type]
        rhs_dilate=fields.get("rhs_dilate", one),  # type: ignore[arg-type]
        rhs_reversal=fields.get("rhs_reversal", (0,) * rank),  # type: ignore[arg-type]
    )


_LABELS = re.compile(r"([^_\->]+)_([^_\->]+)->([^_\->]+)\Z")


def parse_dim_labels(text: str) -> ConvDims:
    """`b01f_01io->b01f`: b/f batch and feature, i/o kernel input/output features, digits
    the spatial dimensions in order."""
    m = _LABELS.match(text)
    if not m:
        raise PieceError(f"expected dim_labels like b01f_01io->b01f, found {found(text, 0)}", 0)
    lhs, rhs, out = m.group(1), m.group(2), m.group(3)
    n = len(lhs) - 2

    def dims(labels: str, a: str, b: str, start: int) -> tuple[int, int, tuple[int, ...]]:
        want = sorted(a + b + "".join(str(i) for i in range(n)))
        if len(labels) != n + 2 or sorted(labels) != want:
            raise PieceError(f"expected {n + 2} labels ({a}, {b} and spatial 0..{n - 1}), "
                             f"found {labels!r}", start)
        return labels.index(a), labels.index(b), tuple(labels.index(str(i)) for i in range(n))

    ib, if_, isp = dims(lhs, "b", "f", 0)
    ki, ko, ksp = dims(rhs, "i", "o", m.start(2))
    ob, of, osp = dims(out, "b", "f", m.start(3))
    return ConvDims(ib, if_, isp, ki, ko, ksp, ob, of, osp)


def parse_padding(text: str) -> tuple[tuple[int, int, int], ...]:
    """`0_0x1_1_0`: low_high[_interior] per dimension."""
    if not text:
        return ()
    out = []
    for part in text.split("x"):
        pieces = part.split("_")
        try:
            nums = [int(p) for p in pieces]
        except ValueError:
            nums = []
        if len(nums) not in (2, 3):
            raise PieceError(f"expected padding like 0_0x1_1_0 (low_high[_interior] per "
                             f"dimension), found {found(text, 0)}", 0)
        out.append((nums[0], nums[1], nums[2] if len(nums) == 3 else 0))
    return tuple(out)
