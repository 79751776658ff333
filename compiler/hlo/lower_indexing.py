"""gather and scatter (variadic scatter too), with their dimension numbers."""

from __future__ import annotations

from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops


def _ints(cx: InstrContext, name: str, default: tuple[int, ...] | None = None
          ) -> tuple[int, ...]:
    value = cx.attr(name) if default is None else cx.attr(name, default)
    return tuple(value)  # type: ignore[arg-type]


@converts("gather")
def lower_gather(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    return cx.emit1(ops.gather, [cx.value(0), cx.value(1)], {
        "offset_dims": _ints(cx, "offset_dims", ()),
        "collapsed_slice_dims": _ints(cx, "collapsed_slice_dims", ()),
        "operand_batching_dims": _ints(cx, "operand_batching_dims", ()),
        "start_indices_batching_dims": _ints(cx, "start_indices_batching_dims", ()),
        "start_index_map": _ints(cx, "start_index_map"),
        "index_vector_dim": cx.attr("index_vector_dim"),
        "slice_sizes": _ints(cx, "slice_sizes"),
        "indices_are_sorted": cx.attr("indices_are_sorted", False),
    })


@converts("scatter")
def lower_scatter(cx: InstrContext) -> Tree:
    values = cx.values()
    if len(values) % 2 == 0:
        raise cx.error(f"expected inputs, indices, then as many updates as inputs, found "
                       f"{len(values)} operands", at=cx.instr.operands_offset)
    results = cx.emit(ops.scatter, values, {
        "update_window_dims": _ints(cx, "update_window_dims", ()),
        "inserted_window_dims": _ints(cx, "inserted_window_dims", ()),
        "input_batching_dims": _ints(cx, "input_batching_dims", ()),
        "scatter_indices_batching_dims": _ints(cx, "scatter_indices_batching_dims", ()),
        "scatter_dims_to_operand_dims": _ints(cx, "scatter_dims_to_operand_dims"),
        "index_vector_dim": cx.attr("index_vector_dim"),
        "computation": cx.computation("to_apply"),
        "indices_are_sorted": cx.attr("indices_are_sorted", False),
        "unique_indices": cx.attr("unique_indices", False),
    })
    return tuple(results) if cx.instr.shape.is_tuple else results[0]
