"""Chains of constant scalings and shifts folded into one multiply and one add.

A batch norm exported as its own ops, or followed by a separate scale layer (Caffe's
``Scale``, a convolution's bias then a batch norm), reaches the elementwise fusion as a
chain such as ``((x * a + b) * c) + d`` with a, b, c, d float constants (or broadcasts of
constants that only insert dimensions). Each link reads the previous one's result, and that
result has no other use. Such a chain computes ``x * s + t`` with ``s = a * c`` and
``t = b * c + d``: `fold_affine_chains` replaces it by that multiply and that add (or the
one of them the chain needs), with s and t computed once at compile time in float64 and
rounded once to the element type, as onnxruntime folds a batch norm into the layer before
it. Results differ from the chain's by the rounding of the reassociation (an ulp or a few),
not more. A chain is only rewritten when it loses ops, and only when its new constants are
no larger than its largest constant (no full-size constant is ever made of broadcasts).

Fewer passes over each block in the fused kernel follow, and a chain that starts at a
convolution's result then starts with a multiply, which the epilogue fusion folds into the
convolution's weights (`epilogue.py`): DenseNet's bias, batch norm and ReLU after each 1x1
convolution become an add and a maximum.
"""

from __future__ import annotations

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_ints
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.rewrite import constant_value, use_counts
from nxcc.passes.ir_edit import make_op, replace_ops

_LINKS = (ops.add, ops.multiply)


def fold_affine_chains(module: Module, fn: Function) -> bool:
    """Fold every chain of constant multiplies and adds of `fn` (see the module doc), in
    place; True if any was."""
    uses = use_counts(fn)
    replaced: dict[int, list[Op]] = {}
    dropped: set[int] = set()
    inner = {id(op.operands[k].owner) for op in fn.body if (k := _link(op)) is not None
             and _extends(op.operands[k], op, uses)}
    for op in fn.body:
        if id(op) in inner or _link(op) is None:
            continue
        chain = _chain(op, uses)
        if len(chain) < 3 and not (len(chain) == 2 and chain[0].opdef is chain[1].opdef):
            continue
        made = _folded(module, chain)
        if made is None:
            continue
        replaced[id(op)] = made
        dropped.update(id(link) for link in chain[:-1])
    if not replaced:
        return False
    replace_ops(fn, replaced, dropped)
    return True


def _link(op: Op) -> int | None:
    """The index of the operand an add or multiply of floats applies a constant to (the
    other operand being that constant), or None."""
    if op.opdef not in _LINKS or not op.result.type.dtype.is_float:
        return None
    for k in (0, 1):
        if _constant(op.operands[1 - k], op.result.type.shape) is not None:
            return k
    return None


def _extends(v: Value, reader: Op, uses: dict[int, int]) -> bool:
    """v, an operand of link `reader`, is the result of a link of the same type read by
    `reader` only (so the chain may take it in)."""
    return (v.owner is not None and _link(v.owner) is not None and uses.get(id(v)) == 1
            and v.type == reader.result.type)


def _chain(end: Op, uses: dict[int, int]) -> list[Op]:
    """The links ending at `end`, first to last."""
    chain = [end]
    while True:
        k = _link(chain[0])
        assert k is not None
        v = chain[0].operands[k]
        if not _extends(v, chain[0], uses):
            return chain
        assert v.owner is not None
        chain.insert(0, v.owner)


def _constant(v: Value, shape: tuple[int, ...]) -> np.ndarray | None:
    """v's value viewed at `shape`'s rank (size 1 where it is broadcast), when v is a
    constant or a broadcast_in_dim of one that only inserts dimensions; else None."""
    owner = v.owner
    if owner is not None and owner.opdef is ops.broadcast_in_dim:
        dims = list(attr_ints(owner.attrs, "broadcast_dimensions"))
        if any(b <= a for a, b in zip(dims, dims[1:], strict=False)):
            return None
        inner = constant_value(owner.operands[0])
        if inner is None:
            return None
        view = [1] * len(shape)
        for size, d in zip(inner.type.shape, dims, strict=True):
            view[d] = size
        return inner.array.reshape(view)
    value = constant_value(v)
    if value is None or value.type.shape != shape:
        return None
    return value.array[(slice(0, 1),) * len(shape)] if value.is_splat else value.array


def _folded(module: Module, chain: list[Op]) -> list[Op] | None:
    """The ops computing the chain's result as x * s + t (s, t constants broadcast to it),
    or None when its constants would grow."""
    shape = chain[-1].result.type.shape
    dtype = chain[-1].result.type.dtype
    if 0 in shape:
        return None
    scale: np.ndarray = np.ones((1,) * len(shape))
    shift: np.ndarray = np.zeros((1,) * len(shape))
    largest = 1
    scaled = shifted = False
    for link in chain:
        k = _link(link)
        assert k is not None
        c = _constant(link.operands[1 - k], shape)
        assert c is not None
        largest = max(largest, c.size)
        c64 = c.astype(np.float64)
        if link.opdef is ops.multiply:
            scale, shift, scaled = scale * c64, shift * c64, True
        else:
            shift, shifted = shift + c64, True
    if max(scale.size, shift.size) > largest:
        return None
    k = _link(chain[0])
    assert k is not None
    value = chain[0].operands[k]
    made: list[Op] = []
    for opdef, array, wanted in ((ops.multiply, scale, scaled), (ops.add, shift, shifted)):
        if not wanted:
            continue
        made += _broadcast_constant(module, Dense.of(array, dtype), shape)
        made.append(make_op(module, opdef, [value, made[-1].result]))
        value = made[-1].result
    made[-1].result.name = chain[-1].result.name
    made[-1].result.sharding = chain[-1].result.sharding
    return made


def _broadcast_constant(module: Module, value: Dense, shape: tuple[int, ...]) -> list[Op]:
    """A constant holding `value` (at `shape`'s rank, size 1 where broadcast) without its
    size-1 dimensions, and its broadcast_in_dim to `shape` (none when it has that shape)."""
    array = value.array
    dims = [d for d, n in enumerate(array.shape) if n != 1]
    kept = array.reshape([array.shape[d] for d in dims])
    constant = make_op(module, ops.constant, [], {"value": Dense.of(kept, value.type.dtype)})
    if tuple(kept.shape) == shape:
        return [constant]
    return [constant, make_op(module, ops.broadcast_in_dim, [constant.result],
                              {"shape": shape, "broadcast_dimensions": tuple(dims)})]
