"""Epilogues: a convolution and the elementwise op that alone reads it become one op.

After the elementwise groups are fused (`elementwise.py`), a `convolution` whose result is
read by one op only, a `fused_elementwise` or a single elementwise op (the bias add and
ReLU after a convolution, a residual add), and read there as a whole (every dimension, not
broadcast) becomes a `fused_convolution`: the convolution's operands, then the epilogue's
other operands, and the epilogue's program with the convolution's result as its a0. The
kernel then finishes the product in place, while it is in cache, instead of a separate pass
over memory (`ir/kernels/fused_convolution.py`). Only when the epilogue keeps the
convolution's element type (its result is written where the product was), and never for a
value the function returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.fused_program import format_program, parse_program
from nxcc.passes.dead_code_elimination import DeadCodeElimination
from nxcc.passes.fusion.elementwise import Group, fused_op, fusible, scalar_computation


@dataclass(frozen=True)
class FuseEpilogues:
    """Fuses each convolution with the elementwise op that alone reads it (after `fuse`)."""

    name: ClassVar[str] = "fuse-epilogue"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            if not scalar_computation(fn):
                changed |= fuse_epilogues(fn)
        if changed:  # the broadcasts a single op's epilogue reads through
            DeadCodeElimination().run(module)
        return changed


def fuse_epilogues(fn: Function) -> bool:
    """Fuse each convolution of `fn` with its epilogue, in place; True if any was."""
    uses: dict[int, int] = {}
    for op in fn.body:
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    returned = {id(v) for v in fn.results}
    position = {id(op): i for i, op in enumerate(fn.body)}
    replaced: dict[int, Op] = {}  # id of an epilogue -> its fused convolution
    dropped: set[int] = set()  # ids of the convolutions fused
    for op in fn.body:
        if op.opdef is not ops.fused_elementwise and not fusible(op):
            continue
        epilogue = op if op.opdef is ops.fused_elementwise else fused_op(
            Group(op, {id(op): op}), position)
        k = _product_operand(epilogue, uses, returned)
        if k is None or id(epilogue.operands[k].owner) in dropped:
            continue
        conv = epilogue.operands[k].owner
        assert conv is not None
        replaced[id(op)] = _fused(conv, epilogue, k)
        dropped.add(id(conv))
    if not replaced:
        return False
    results = {id(op.result): new.result for op in fn.body
               if (new := replaced.get(id(op))) is not None}
    body = []
    for op in fn.body:
        if id(op) in dropped:
            continue
        new = replaced.get(id(op), op)
        new.operands = [results.get(id(v), v) for v in new.operands]
        body.append(new)
    fn.body = body
    fn.results = [results.get(id(v), v) for v in fn.results]
    return True


def _product_operand(epilogue: Op, uses: dict[int, int], returned: set[int]) -> int | None:
    """The index of the epilogue's operand that is a convolution's result read only there,
    whole, of the epilogue's element type; None if there is none."""
    dims = parse_program(str(epilogue.attrs["program"])).operand_dims
    result = epilogue.result.type
    for k, v in enumerate(epilogue.operands):
        owner = v.owner
        if (owner is not None and owner.opdef is ops.convolution and uses.get(id(v)) == 1
                and id(v) not in returned and v.type == result
                and dims[k] == tuple(range(result.rank))):
            return k
    return None


def _fused(conv: Op, epilogue: Op, k: int) -> Op:
    """The fused convolution of `conv` with the epilogue that reads it as operand k."""
    program = parse_program(str(epilogue.attrs["program"]))
    order = [k, *(j for j in range(len(epilogue.operands)) if j != k)]
    new_index = {old: new for new, old in enumerate(order)}
    steps = [(s.opcode, s.qualifier,
              [(is_op, new_index[i] if is_op else i) for is_op, i in s.args])
             for s in program.steps]
    text = format_program([program.operand_dims[j] for j in order], steps)
    operands: list[Value] = [*conv.operands, *(epilogue.operands[j] for j in order[1:])]
    attrs = ops.fused_convolution.check_attrs({**conv.attrs, "program": text})
    fused = Op(ops.fused_convolution, operands, [epilogue.result.type], attrs,
               [epilogue.result.name])
    fused.result.sharding = epilogue.result.sharding
    return fused
