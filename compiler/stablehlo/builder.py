"""Building one HLO computation from MLIR ops: value names, instructions, results.

`CompBuilder` turns MLIR value names (``%0``, ``%1#1``, ``%arg0``) into HLO instruction names
of its computation, appends `Instruction`s, and gives a multi-result op one tuple-shaped
instruction plus a get-tuple-element per result (which lower to no IR op at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import (
    ArrayShape,
    Attribute,
    Computation,
    Instruction,
    Shape,
    TupleShape,
)
from nxcc.compiler.stablehlo.syntax import Block, Op

if TYPE_CHECKING:
    from nxcc.compiler.stablehlo.to_hlo import ModuleConverter


def hlo_name(mlir: str) -> str:
    """`%cst_1` -> `cst_1`, `%1#0` -> `1.0`."""
    return mlir.lstrip("%").replace("#", ".")


class FreshNames:
    """Names handed out once each: `fresh(base)` is `base`, or `base.K` with the first K
    that is free."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counters: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        name, k = base, self.counters.get(base, 1)
        while name in self.taken:
            k += 1
            name = f"{base}.{k}"
        self.counters[base] = k
        self.taken.add(name)
        return name


class CompBuilder:
    """The instructions of one computation and the MLIR names bound in it."""

    def __init__(self, conv: ModuleConverter, name: str) -> None:
        self.conv = conv
        self.name = name
        self.instrs: list[Instruction] = []
        self.names: dict[str, str] = {}
        self.shapes: dict[str, Shape] = {}
        self.fresh = FreshNames().fresh  # instruction names of this computation

    def ref(self, mlir: str, offset: int) -> str:
        """The HLO name bound to MLIR value `mlir` (HloError when it is not defined)."""
        name = self.names.get(mlir)
        if name is None:
            raise HloError(f"expected a value defined before this use, found '{mlir}'",
                           self.conv.source, offset, E.SEMANTIC)
        return name

    def shape_of(self, mlir: str, offset: int) -> Shape:
        return self.shapes[self.ref(mlir, offset)]

    def operand_array(self, op: Op, index: int) -> ArrayShape:
        """The array type of `op`'s operand `index` (HloError if it has no such operand or
        it is a tuple or token)."""
        if index >= len(op.operands):
            raise HloError(f"expected at least {index + 1} operand(s) of {op.name}, found "
                           f"{len(op.operands)}", self.conv.source, op.offset, E.SEMANTIC)
        shape = self.shape_of(op.operands[index], op.offset)
        if not isinstance(shape, ArrayShape):
            raise HloError(f"expected a tensor as operand {index} of {op.name}, found {shape}",
                           self.conv.source, op.offset, E.SEMANTIC)
        return shape

    def bind(self, mlir: str, hlo: str) -> None:
        self.names[mlir] = hlo

    # -- instructions ------------------------------------------------------------------
    def add(self, opcode: str, shape: Shape, operands: list[str], attrs: dict[str, object],
            op: Op | None, base: str = "", **extra: object) -> str:
        """Append an instruction (operands are HLO names); its new name."""
        at = op.offset if op is not None else 0
        name = self.fresh(base or opcode.replace("-", "_"))
        typed = {}
        if attrs:
            offsets = op.attr_offsets if op is not None else {}
            typed = {k: Attribute(k, v, str(v), offsets.get(k, at)) for k, v in attrs.items()}
        first = op.operand_offsets[0] if op is not None and op.operand_offsets else at
        instr = Instruction(name, shape, opcode, operands, typed, False, at, at, first)
        if extra:
            for k, v in extra.items():
                setattr(instr, k, v)
        self.instrs.append(instr)
        self.shapes[name] = shape
        return name

    def emit(self, op: Op, opcode: str, operands: list[str], attrs: dict[str, object],
             shape: Shape | None = None, **extra: object) -> str:
        """The instruction computing `op`'s results (MLIR operand names resolved), bound
        to its result names: one array result directly, several through a tuple."""
        hlo_operands = [self.ref(o, at) for o, at in self.operand_pairs(op, operands)]
        if shape is None:
            shape = op.out_types[0] if len(op.out_types) == 1 else TupleShape(
                tuple(op.out_types))
        base = hlo_name(op.results[0]).split(".")[0] if op.results else ""
        name = self.add(opcode, shape, hlo_operands, attrs, op, base, **extra)
        self.bind_results(op, name, shape)
        return name

    def operand_pairs(self, op: Op, operands: list[str]) -> list[tuple[str, int]]:
        """Each of `operands` with where `op` writes it (the op's offset if nowhere)."""
        if operands is op.operands and len(op.operand_offsets) == len(operands):
            return list(zip(operands, op.operand_offsets, strict=True))
        where = dict(zip(op.operands, op.operand_offsets, strict=False))
        return [(o, where.get(o, op.offset)) for o in operands]

    def bind_results(self, op: Op, name: str, shape: Shape) -> None:
        if not op.results:
            return
        if len(op.results) == 1 and not shape.is_tuple:
            self.bind(op.results[0], name)
            return
        elements = shape.elements if isinstance(shape, TupleShape) else (shape,)
        if len(elements) != len(op.results):
            raise HloError(f"expected {len(elements)} result names for {op.name}, found "
                           f"{len(op.results)}", self.conv.source, op.offset, E.SEMANTIC)
        for k, (res, element) in enumerate(zip(op.results, elements, strict=True)):
            gte = self.add("get-tuple-element", element, [name], {"index": k}, op,
                           hlo_name(res))
            self.bind(res, gte)

    def parameter(self, mlir: str, shape: Shape, number: int, **extra: object) -> str:
        name = self.add("parameter", shape, [], {}, None, hlo_name(mlir),
                        parameter_number=number, **extra)
        self.bind(mlir, name)
        return name

    def finish(self, results: list[str], offset: int, tuple_always: bool = False,
               is_entry: bool = False) -> Computation:
        """The computation whose ROOT is the one result, or a tuple of them."""
        if len(results) == 1 and not tuple_always:
            root = next(i for i in reversed(self.instrs) if i.name == results[0])
            root.root = True
        else:
            self.add("tuple", TupleShape(tuple(self.shapes[r] for r in results)), results,
                     {}, None)
            self.instrs[-1].root = True
        return Computation(self.name, self.instrs, is_entry=is_entry, offset=offset)


def free_values(block: Block) -> list[str]:
    """The values `block` (and the regions inside it) uses but does not define, in the
    order of first use."""
    defined: set[str] = {a for a, _ in block.args}
    out: list[str] = []
    seen: set[str] = set()

    def walk(ops: list[Op]) -> None:
        for op in ops:
            for v in [*op.operands, *op.inits]:
                if v not in defined and v not in seen:
                    seen.add(v)
                    out.append(v)
            for region in op.regions:
                for blk in region:
                    defined.update(a for a, _ in blk.args)
                    walk(blk.ops)
            defined.update(op.results)

    walk(block.ops)
    return out
