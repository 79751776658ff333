"""Hypothesis strategies that mutate inputs structurally: JSON trees, text and bytes.

Every function takes the value to change and a hypothesis `data` object, and draws its
choices from it, so a run is reproducible from hypothesis's seed and a failing case can be
replayed from its saved bytes.
"""

from __future__ import annotations

import copy
import io
import zipfile
from typing import Any

from hypothesis import strategies as st

BOUNDARY_INTS = (-(1 << 63), -(1 << 31), -1, 0, 1, 2, 7, 255, (1 << 31) - 1, 1 << 31,
                 1 << 32, (1 << 63) - 1, 1 << 64, 10 ** 30)
DTYPE_NAMES = ("f32", "f16", "bf16", "f64", "s8", "s32", "s64", "u8", "pred", "s4", "f8e4m3fn",
               "f33", "q7", "", "float32")

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.sampled_from(BOUNDARY_INTS), st.integers(-70000, 70000),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(DTYPE_NAMES),
    st.lists(st.sampled_from(BOUNDARY_INTS + (3, 4, 16)), max_size=5),
    st.just({}), st.just([]), st.just({"symbol": "main"}), st.just({"weight": "w0"}),
    st.just({"f": "nan"}), st.just({"dtype": "f33"}),
)
"""Values a hostile or broken writer might put anywhere."""


def paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every node of a JSON tree, as the keys and indices leading to it (root first)."""
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out.extend(paths(v, (*prefix, i)))
    return out


def _get(tree: Any, path: tuple) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def mutate_json(tree: Any, data: st.DataObject) -> Any:
    """One structural change at a node hypothesis picks: delete it, replace it by a
    hostile value, change its kind, duplicate it, nest it deeper, or swap it with another
    node's value."""
    tree = copy.deepcopy(tree)
    nodes = paths(tree)
    path = nodes[data.draw(st.integers(0, len(nodes) - 1), label="node")]
    action = data.draw(st.sampled_from(("delete", "replace", "retype", "duplicate", "nest",
                                        "swap")), label="action")
    value = _get(tree, path)
    if action == "swap":
        other = _get(tree, nodes[data.draw(st.integers(0, len(nodes) - 1))])
        new = copy.deepcopy(other)
    elif action == "replace":
        new = data.draw(HOSTILE, label="value")
    elif action == "retype":
        new = data.draw(st.sampled_from((None, [value], {"x": value}, str(value)[:40],
                                         len(str(value)))))
    elif action == "nest":
        new = value
        for _ in range(data.draw(st.integers(1, 200))):
            new = [new]
    else:
        new = value
    if not path:
        return new if action != "delete" else None
    parent, key = _get(tree, path[:-1]), path[-1]
    if action == "delete":
        del parent[key]
    elif action == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
    else:
        parent[key] = new
    return tree


def mutate_bytes(raw: bytes, data: st.DataObject) -> bytes:
    """A few bit flips, a truncation, an insertion or a duplicated span."""
    if not raw:
        return data.draw(st.binary(max_size=64))
    buf = bytearray(raw)
    action = data.draw(st.sampled_from(("flip", "truncate", "insert", "repeat")))
    if action == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
    elif action == "truncate":
        del buf[data.draw(st.integers(0, len(buf) - 1)):]
    elif action == "insert":
        i = data.draw(st.integers(0, len(buf)))
        buf[i:i] = data.draw(st.binary(min_size=1, max_size=16))
    else:
        i = data.draw(st.integers(0, len(buf) - 1))
        j = min(len(buf), i + data.draw(st.integers(1, 64)))
        buf[j:j] = buf[i:j] * data.draw(st.integers(1, 50))
    return bytes(buf)


def zip_members(raw: bytes) -> dict[str, bytes] | None:
    """The members of a zip archive by name, or None when zipfile cannot read it."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            return {i.filename: z.read(i) for i in z.infolist()}
    except Exception:  # any archive zipfile cannot read (a mutant of the harness's own)
        return None


def zip_of(members: dict[str, bytes]) -> bytes:
    """A zip archive holding `members` in their order."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def mutate_lines(raw: bytes, data: st.DataObject) -> bytes:
    """One line of `raw` dropped, copied elsewhere or swapped with another."""
    lines = raw.split(b"\n")
    i = data.draw(st.integers(0, len(lines) - 1))
    action = data.draw(st.sampled_from(("drop", "copy", "swap")))
    if action == "drop":
        del lines[i]
    elif action == "copy":
        lines.insert(data.draw(st.integers(0, len(lines))), lines[i])
    else:
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)
