"""Which replicated parameters get only a part of their gradient on each TP rank.

Values differ between the TP ranks where each holds its part of a whole: the slices of
split parameters, what the primitives mark so (`Model.mark_local`: a column-parallel
product, a reduce-scatter's sequence shard, a scatter), and whatever is computed from them
until a collective makes the value whole again (`all_reduce`, `all_gather`). A replicated
parameter whose value (or a value computed from it and nothing rank-specific) meets such a
*local* value in an op gets, on each rank, only the gradient of that rank's part: the
engine's stage program sums it over the TP group. Through `tp_copy` or a collective a
replicated value's gradient is made whole by the collective's gradient rule, so such a use
is *complete*. A parameter used both ways would be summed twice: it is refused.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.nxd.model import Model, ModelError

#: collectives whose result is the same on every rank of the group
_WHOLE = (ops.all_reduce, ops.all_gather)


def partial_gradients(m: Model, outputs: list[Value]) -> frozenset[str]:
    """The replicated parameters of `m` whose gradient the TP ranks must sum (see the
    module docstring); `outputs` are the model's results (a use that reaches them is
    complete)."""
    if m.tp_size == 1:
        return frozenset()
    local = set(m.local)
    deps: dict[int, frozenset[str]] = {id(d.value): frozenset({d.spec.name})
                                       for d in m.declared if d.spec.replicated}
    partial: set[str] = set()
    complete: set[str] = set()
    for op in m.fn.body:
        found = frozenset().union(*(deps.get(id(v), frozenset()) for v in op.operands
                                    if id(v) not in local))
        opdef = op.opdef
        if opdef in _WHOLE or opdef is ops.tp_copy:
            complete |= found
            if opdef is ops.tp_copy and any(id(v) in local for v in op.operands):
                local.update(id(r) for r in op.results)
            continue
        if opdef is ops.reduce_scatter:
            complete |= found
            local.update(id(r) for r in op.results)
            continue
        if any(id(v) in local for v in op.operands) or any(id(r) in local for r in op.results):
            partial |= found
            local.update(id(r) for r in op.results)
        elif found:
            for r in op.results:
                deps[id(r)] = found
    for v in outputs:
        complete |= deps.get(id(v), frozenset())
    both = sorted(partial & complete)
    if both:
        raise ModelError(f"parameter {both[0]!r} is used both on values split over the "
                         "tensor-parallel ranks and on replicated ones: its gradient could "
                         "not be summed once (use it in one region)")
    return frozenset(partial)
