"""Reductions and windowed ops: reduce, reduce_window, select_and_scatter, sort.

Their computations are functions of the module taking and returning scalars, as in HLO:
a variadic reduce over N inputs calls a computation of 2N scalars returning N.
"""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_dims, check_scalar, fail, window_output_size
from nxcc.ir.ops._symbols import check_signature, lookup, scalar_of
from nxcc.ir.types import TensorType


def _split_inputs_inits(op: str, ts: list[TensorType]) -> tuple[list, list]:
    if len(ts) % 2:
        raise fail(f"{op}: needs as many init values as inputs, got {len(ts)} operands")
    n = len(ts) // 2
    inputs, inits = ts[:n], ts[n:]
    for i, (x, init) in enumerate(zip(inputs, inits, strict=True)):
        check_scalar(op, f"init value {i}", init)
        if x.shape != inputs[0].shape:
            raise fail(f"{op}: input {i} is {x}, expected the shape of {inputs[0]}")
    return inputs, inits


def _reduce(ts, attrs, module):
    inputs, inits = _split_inputs_inits("reduce", ts)
    dims = attrs["dimensions"]
    check_dims("reduce", "dimension", dims, inputs[0].rank)
    keep = tuple(n for d, n in enumerate(inputs[0].shape) if d not in dims)
    results = [TensorType(init.dtype, keep) for init in inits]
    fn = lookup("reduce", module, attrs["computation"])
    scalars = [scalar_of(t) for t in inits]
    check_signature("reduce", fn, scalars + [scalar_of(t) for t in inputs], scalars)
    return results


reduce = define(
    OpDef(
        "reduce",
        _reduce,
        attrs={"dimensions": AttrSpec(AttrKind.INTS), "computation": AttrSpec(AttrKind.SYMBOL)},
        operands=None,
        min_operands=2,
        doc="reduce(inputs..., inits...) over `dimensions` with @computation(acc..., x...).",
    )
)

WINDOW_ATTRS = {
    "window_dimensions": AttrSpec(AttrKind.INTS),
    "window_strides": AttrSpec(AttrKind.INTS),
    "base_dilations": AttrSpec(AttrKind.INTS),
    "window_dilations": AttrSpec(AttrKind.INTS),
    "padding": AttrSpec(AttrKind.INTS2),
}


def window_shape(op: str, t: TensorType, attrs) -> tuple[int, ...]:
    """The shape a window with `attrs` slides over `t` to produce."""
    keys = ("window_dimensions", "window_strides", "base_dilations", "window_dilations",
            "padding")
    for key in keys:
        if len(attrs[key]) != t.rank:
            raise fail(f"{op}: {key} has {len(attrs[key])} entries for operand {t}")
    out = []
    for d in range(t.rank):
        lo, hi = attrs["padding"][d]
        out.append(window_output_size(
            t.shape[d], attrs["window_dimensions"][d], attrs["window_strides"][d], lo, hi,
            attrs["base_dilations"][d], attrs["window_dilations"][d]))
    return tuple(out)


def _reduce_window(ts, attrs, module):
    inputs, inits = _split_inputs_inits("reduce_window", ts)
    shape = window_shape("reduce_window", inputs[0], attrs)
    fn = lookup("reduce_window", module, attrs["computation"])
    scalars = [scalar_of(t) for t in inits]
    check_signature("reduce_window", fn, scalars + [scalar_of(t) for t in inputs], scalars)
    return [TensorType(init.dtype, shape) for init in inits]


reduce_window = define(
    OpDef(
        "reduce_window",
        _reduce_window,
        attrs={**WINDOW_ATTRS, "computation": AttrSpec(AttrKind.SYMBOL)},
        operands=None,
        min_operands=2,
    )
)


def _select_and_scatter(ts, attrs, module):
    operand, source, init = ts
    check_scalar("select_and_scatter", "init value", init)
    full = {**attrs, "base_dilations": (1,) * operand.rank,
            "window_dilations": (1,) * operand.rank}
    shape = window_shape("select_and_scatter", operand, full)
    if source.shape != shape:
        raise fail(f"select_and_scatter: source {source} must have the window shape {shape}")
    s = scalar_of(operand)
    check_signature("select_and_scatter", lookup("select_and_scatter", module, attrs["select"]),
                    [s, s], [TensorType(DType.PRED, ())])
    si = scalar_of(init)
    check_signature("select_and_scatter", lookup("select_and_scatter", module, attrs["scatter"]),
                    [si, si], [si])
    return [operand.with_dtype(init.dtype)]


select_and_scatter = define(
    OpDef(
        "select_and_scatter",
        _select_and_scatter,
        attrs={
            "window_dimensions": AttrSpec(AttrKind.INTS),
            "window_strides": AttrSpec(AttrKind.INTS),
            "padding": AttrSpec(AttrKind.INTS2),
            "select": AttrSpec(AttrKind.SYMBOL),
            "scatter": AttrSpec(AttrKind.SYMBOL),
        },
        operands=3,
    )
)


def _sort(ts, attrs, module):
    for i, t in enumerate(ts):
        if t.shape != ts[0].shape:
            raise fail(f"sort: operand {i} is {t}, expected the shape of {ts[0]}")
    check_dims("sort", "dimension", [attrs["dimension"]], ts[0].rank)
    params = [s for t in ts for s in (scalar_of(t), scalar_of(t))]
    check_signature("sort", lookup("sort", module, attrs["comparator"]), params,
                    [TensorType(DType.PRED, ())])
    return list(ts)


sort = define(
    OpDef(
        "sort",
        _sort,
        attrs={
            "dimension": AttrSpec(AttrKind.INT),
            "is_stable": AttrSpec(AttrKind.BOOL, False),
            "comparator": AttrSpec(AttrKind.SYMBOL),
        },
        operands=None,
        min_operands=1,
        doc="Sorts all operands along `dimension` by @comparator(a0, b0, a1, b1, ...).",
    )
)
