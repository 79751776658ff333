"""`memory_plan`: first-fit offsets in one arena per function, buffers reused once their
value is dead, never an output over a live input, views placed inside their root's buffer
(which lives as long as its last view); checked on written programs and on random ones."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.program.memory_plan import ALIGNMENT, plan_memory
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.ir import ops
from nxcc.ir.core import Function
from nxcc.ir.parser import parse_module

CHAIN = """\
module @m {
  func @main(%x: f32[64]) -> (f32[64]) {
    %a = exp(%x) : f32[64]
    %b = exp(%a) : f32[64]
    %c = exp(%b) : f32[64]
    return %c
  }
}
"""


def entry(text: str) -> Function:
    return parse_module(text).entry_function


def by_name(fn: Function, offsets: dict[int, int]) -> dict[str, int]:
    return {r.name: offsets[id(r)] for op in fn.body for r in op.results if id(r) in offsets}


def planned_results(fn: Function) -> set[int]:
    """What the lowering plans: every op result but constants'."""
    return {id(r) for op in fn.body if op.opdef is not ops.constant for r in op.results}


def test_a_chain_reuses_the_buffer_of_a_dead_value() -> None:
    fn = entry(CHAIN)
    plan = plan_memory(fn, planned_results(fn))
    # a at 0; b beside it (a is b's operand); c where a was (a died after b), not over b
    assert by_name(fn, plan.offsets) == {"a": 0, "b": 256, "c": 0}
    assert plan.arena_bytes == 512
    assert plan.views == frozenset() and plan.strides == {}


def test_small_values_take_a_whole_aligned_slot() -> None:
    fn = entry("""\
module @m {
  func @main(%x: f32[1]) -> (f32[1]) {
    %a = exp(%x) : f32[1]
    %b = exp(%x) : f32[1]
    %c = add(%a, %b) : f32[1]
    return %c
  }
}
""")
    plan = plan_memory(fn, planned_results(fn))
    assert by_name(fn, plan.offsets) == {"a": 0, "b": ALIGNMENT, "c": 2 * ALIGNMENT}
    assert plan.arena_bytes == 3 * ALIGNMENT


def test_unplanned_values_get_no_offset() -> None:
    fn = entry(CHAIN)
    a = fn.body[0].result
    plan = plan_memory(fn, planned_results(fn) - {id(a)})
    assert id(a) not in plan.offsets
    assert by_name(fn, plan.offsets) == {"b": 0, "c": 256}


def test_views_lie_in_their_roots_buffer_which_lives_until_the_last_view() -> None:
    fn = entry("""\
module @m {
  func @main(%x: f32[4,6]) -> (f32[24], f32[2,3]) {
    %p = exp(%x) : f32[4,6]
    %flat = reshape(%p) {shape = [24]} : f32[24]
    %odd = slice(%p) {start_indices = [1, 0], limit_indices = [4, 6], strides = [2, 2]} : f32[2,3]
    %y = exp(%x) : f32[4,6]
    %z = negate(%flat) : f32[24]
    return %z, %odd
  }
}
""")
    plan = plan_memory(fn, planned_results(fn))
    names = by_name(fn, plan.offsets)
    values = {r.name: r for op in fn.body for r in op.results}
    assert plan.views == frozenset({id(values["flat"]), id(values["odd"])})
    assert names["flat"] == names["p"]  # a reshape of a contiguous value: the same bytes
    assert names["odd"] == names["p"] + 6 * 4  # row 1
    assert plan.strides == {id(values["odd"]): (2 * 6 * 4, 2 * 4)}  # every other row, column
    # %p's buffer is held by %odd, returned: %y and %z never take it
    for name in ("y", "z"):
        assert names[name] + _slot(96) <= names["p"] or names["p"] + _slot(96) <= names[name]


def test_a_tp_copy_views_its_operand_and_runs_no_instruction() -> None:
    """tp_copy moves nothing forward: its result is its operand's buffer, and the program
    copies nothing."""
    text = """\
module @m {
  func @main(%x: f32[4,6]) -> (f32[4,6]) {
    %p = exp(%x) : f32[4,6]
    %c = tp_copy(%p) {replica_groups = [[0]]} : f32[4,6]
    %z = negate(%c) : f32[4,6]
    return %z
  }
}
"""
    fn = entry(text)
    plan = plan_memory(fn, planned_results(fn))
    names = by_name(fn, plan.offsets)
    assert names["c"] == names["p"] and names["z"] != names["p"]
    program = lower_module(parse_module(text), WeightTable())
    assert [i["op"] for i in program["functions"]["main"]["instructions"]] == ["exp", "negate"]
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(ProgramExecutor(program, {}).run([x])[0], -np.exp(x))


@st.composite
def programs(draw) -> str:
    """A random program of exp, add (of equal shapes), slices and reshapes (views) over
    1-D values, with some values returned."""
    size = draw(st.integers(1, 40))
    shapes = {"%x": size, "%w": size}
    lines = []
    for i in range(draw(st.integers(1, 14))):
        name = f"%v{i}"
        src = draw(st.sampled_from(sorted(shapes)))
        n = shapes[src]
        kind = draw(st.sampled_from(["exp", "add", "slice", "reshape"]))
        if kind == "add":
            other = draw(st.sampled_from(sorted(v for v in shapes if shapes[v] == n)))
            lines.append(f"{name} = add({src}, {other}) : f32[{n}]")
        elif kind == "slice" and n > 1:
            start = draw(st.integers(0, n - 1))
            step = draw(st.integers(1, 3))
            n = len(range(start, n, step))
            lines.append(f"{name} = slice({src}) {{start_indices = [{start}], limit_indices = "
                         f"[{start + (n - 1) * step + 1}], strides = [{step}]}} : f32[{n}]")
        elif kind == "reshape":
            lines.append(f"{name} = reshape({src}) {{shape = [{n}]}} : f32[{n}]")
        else:
            lines.append(f"{name} = exp({src}) : f32[{n}]")
        shapes[name] = n
    made = [v for v in shapes if v.startswith("%v")]
    returned = draw(st.lists(st.sampled_from(made), min_size=1, max_size=3, unique=True))
    body = "\n    ".join(lines)
    signature = ", ".join(f"f32[{shapes[v]}]" for v in returned)
    return (f"module @m {{\n  func @main(%x: f32[{size}], %w: f32[{size}]) -> ({signature}) "
            f"{{\n    {body}\n    return {', '.join(returned)}\n  }}\n}}\n")


def _slot(nbytes: int) -> int:
    return max((nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT, ALIGNMENT)


@settings(max_examples=200, deadline=None)
@given(text=programs())
def test_no_two_live_buffers_overlap(text: str) -> None:
    fn = entry(text)
    plan = plan_memory(fn, planned_results(fn))
    views = plan.views
    root: dict[int, int] = {}  # view -> the value owning its buffer
    for op in fn.body:
        if id(op.result) in views:
            source = id(op.operands[0])
            root[id(op.result)] = root.get(source, source)
    owner = {id(op.result): op.result for op in fn.body if id(op.result) not in views}
    born = {id(op.result): i for i, op in enumerate(fn.body)}
    dies = dict(born)
    for i, op in enumerate(fn.body):
        for v in op.operands:
            dies[root.get(id(v), id(v))] = i
    for v in fn.results:
        dies[root.get(id(v), id(v))] = len(fn.body)
    spans = {k: (plan.offsets[k], plan.offsets[k] + _slot(v.type.nbytes))
             for k, v in owner.items()}
    assert plan.arena_bytes == max(end for _, end in spans.values())
    for a in owner:
        for b in owner:
            if a < b and born[a] <= dies[b] and born[b] <= dies[a]:  # both live at once
                (a0, a1), (b0, b1) = spans[a], spans[b]
                assert a1 <= b0 or b1 <= a0, text
    for view, base in root.items():  # inside the buffer it views
        assert spans[base][0] <= plan.offsets[view] < spans[base][1], text
