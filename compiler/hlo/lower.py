"""HLO syntax tree -> IR module.

The entry computation becomes the IR function ``main``: its parameters are the entry's
parameter instructions in parameter order, named after them (a tuple-shaped parameter
becomes one IR parameter per array leaf, named ``NAME.i``); its results are the root's
array leaves, named ``output0``, ``output1``... A computation referred to by an attribute
(``to_apply``, ``condition``, ``body``, ``calls`` of a call...) becomes an IR function of the
module with the same flattening; a fusion's computation is inlined where it is used.

Within a computation only what the ROOT depends on is lowered, in dependency order; every
operand name must still refer to an instruction of the same computation.

The entry's `sharding=` annotations are then recorded (`lower_annotations.annotate`): as
`Value.sharding` for an annotated global program, as `Module.spmd` for an SPMD program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo import handlers  # noqa: F401  (registers every lowering)
from nxcc.compiler.hlo.aliases import input_output_aliases
from nxcc.compiler.hlo.context import TOKEN, InstrContext, Tree, leaves, rebuild
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.lower_annotations import annotate
from nxcc.compiler.hlo.lower_p2p import SIDE_EFFECT_OPCODES
from nxcc.compiler.hlo.nodes import (
    ArrayShape,
    Attribute,
    Computation,
    HloModule,
    Instruction,
    Shape,
)
from nxcc.compiler.hlo.registry import CONVERTERS
from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.types import TensorType


def lower_module(hlo: HloModule) -> Module:
    """The IR module computing `hlo`'s entry computation; HloError if it cannot."""
    return ModuleLowering(hlo).run()


def _ir_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.$\-]", "_", name) or "fn"


class ModuleLowering:
    """Lowers one module; each called computation becomes one IR function, once."""

    def __init__(self, hlo: HloModule) -> None:
        self.hlo = hlo
        self.source = hlo.source
        self.computations: dict[str, Computation] = {c.name: c for c in hlo.computations}
        self.module = Module(_ir_name(hlo.name))
        self.functions: dict[str, str] = {}
        self.in_progress: list[str] = []
        # the results of HLO -start instructions whose -done is still to come (lower_collective)
        self.pending: dict[int, object] = {}
        self.constraints: list[tuple[Value, Attribute]] = []  # Sharding custom-calls

    def run(self) -> Module:
        entry = self.hlo.entry
        self.module.entry = "main"
        fn = self.lower_function(entry, "main")
        fn.result_names = [f"output{i}" for i in range(len(fn.results))]
        annotate(self.hlo, self.module, self.parameters(entry), self.constraints)
        self.module.input_output_alias = input_output_aliases(self.hlo)
        return self.module

    def error(self, message: str, offset: int, code: str = E.SEMANTIC) -> HloError:
        return HloError(message, self.source, offset, code)

    def function_for(self, name: str, cx: InstrContext, attr: str) -> Symbol:
        """The IR function of computation `name` (lowered on first use)."""
        if name in self.in_progress:
            raise cx.attr_error(attr, f"expected a computation that does not call itself, "
                                f"found '{name}' calling itself")
        if name in self.functions:
            return Symbol(self.functions[name])
        comp = self.computations.get(name)
        if comp is None:
            raise cx.attr_error(attr, f"expected a computation of the module for '{attr}', "
                                f"found '{name}'")
        if comp is self.hlo.entry:
            raise cx.attr_error(attr, f"expected a non-entry computation, found the ENTRY "
                                f"'{name}'")
        fn = self.lower_function(comp, self.module.unique_function_name(_ir_name(name)))
        return Symbol(fn.name)

    def parameters(self, comp: Computation) -> list[Instruction]:
        """The parameter instructions of `comp` in parameter order (numbers 0..n-1)."""
        params = [i for i in comp.instructions if i.opcode == "parameter"]
        by_number: dict[int, Instruction] = {}
        for p in params:
            n = p.parameter_number
            assert n is not None
            if n in by_number:
                raise self.error(f"expected each parameter number once, found parameter({n}) "
                                 "again", p.opcode_offset)
            by_number[n] = p
        for n in range(len(params)):
            if n not in by_number:
                p = max(params, key=lambda i: i.parameter_number or 0)
                raise self.error(f"expected parameters numbered 0..{len(params) - 1}, found "
                                 f"parameter({p.parameter_number})", p.opcode_offset)
        return [by_number[n] for n in range(len(params))]

    def param_types(self, p: Instruction) -> list[TensorType]:
        out = []
        for leaf in p.shape.leaves():
            if leaf.dtype == "token":
                continue
            cx = InstrContext(p, [], None, self)  # type: ignore[arg-type]
            out.append(cx.ir_type(leaf))
        return out

    def lower_function(self, comp: Computation, fn_name: str) -> Function:
        """A new IR function computing `comp` on its flattened parameters."""
        self.in_progress.append(comp.name)
        env: dict[str, Tree] = {}
        params: list[Value] = []
        for p in self.parameters(comp):
            types = self.param_types(p)
            if len(types) == 1 and not p.shape.is_tuple:
                vals = [Value(types[0], p.name)]
            else:
                vals = [Value(t, f"{p.name}.{i}") for i, t in enumerate(types)]
            params.extend(vals)
            env[p.name] = rebuild(p.shape, vals)
        fn = Function(fn_name, params)
        self.module.add_function(fn)
        self.functions[comp.name] = fn_name
        root = FunctionLowering(self, comp, Builder(self.module, fn), env).run()
        fn.results = leaves(root)
        self.in_progress.pop()
        return fn

    def inline(self, comp: Computation, b: Builder, args: Sequence[Tree],
               cx: InstrContext) -> Tree:
        """Lower `comp` into the function `b` builds, its parameters bound to `args`."""
        params = self.parameters(comp)
        if len(params) != len(args):
            raise cx.error(f"expected {len(params)} operands for computation '{comp.name}', "
                           f"found {len(args)}", at=cx.instr.operands_offset)
        env: dict[str, Tree] = {}
        for p, arg in zip(params, args, strict=True):
            want = self.param_types(p)
            got = [v.type for v in leaves(arg)]
            if want != got:
                raise cx.error(f"expected operands of types ({', '.join(map(str, want))}) for "
                               f"parameter '{p.name}' of '{comp.name}', found "
                               f"({', '.join(map(str, got))})", at=cx.instr.operands_offset)
            env[p.name] = arg
        if comp.name in self.in_progress:
            raise cx.error(f"expected a computation that does not call itself, found "
                           f"'{comp.name}'")
        self.in_progress.append(comp.name)
        try:
            return FunctionLowering(self, comp, b, env).run()
        finally:
            self.in_progress.pop()


class FunctionLowering:
    """Lowers the instructions of one computation into the function `b` builds."""

    def __init__(self, lowering: ModuleLowering, comp: Computation, b: Builder,
                 env: dict[str, Tree]) -> None:
        self.lowering = lowering
        self.comp = comp
        self.b = b
        self.env = env
        self.by_name: dict[str, Instruction] = {}

    def run(self) -> Tree:
        comp = self.comp
        by_name: dict[str, Instruction] = {}
        for instr in comp.instructions:
            if instr.name in by_name:
                raise self.lowering.error(f"expected a new instruction name, found "
                                          f"'{instr.name}' again", instr.offset)
            by_name[instr.name] = instr
        self.by_name = by_name
        for instr in comp.instructions:
            for name in instr.operands:
                if name not in by_name:
                    raise self.lowering.error(
                        f"expected an instruction of computation '{comp.name}', found "
                        f"'{name}', which it does not define", self.operand_offset(instr, name))
        # sends and receives act beyond their results: lowered in program order, then what
        # the root needs (see lower_p2p)
        roots = [i for i in comp.instructions if i.opcode in SIDE_EFFECT_OPCODES]
        for root in [*roots, comp.root]:
            if root.name in self.env:
                continue
            for instr in self.order(root, by_name):
                if instr.opcode == "parameter" or instr.name in self.env:
                    continue
                self.env[instr.name] = self.lower(instr)
        return self.env[comp.root.name]

    def operand_offset(self, instr: Instruction, name: str) -> int:
        text = self.lowering.source.text
        m = re.compile(r"%?" + re.escape(name) + r"(?![\w.\-])").search(
            text, instr.operands_offset)
        return m.start() if m else instr.operands_offset

    def order(self, root: Instruction, by_name: dict[str, Instruction]) -> list[Instruction]:
        """The instructions `root` depends on, each after its operands (no recursion)."""
        state: dict[str, int] = {}
        out: list[Instruction] = []
        stack: list[tuple[Instruction, int]] = [(root, 0)]
        state[root.name] = 1
        while stack:
            instr, i = stack.pop()
            if i < len(instr.operands):
                stack.append((instr, i + 1))
                child = by_name[instr.operands[i]]
                s = state.get(child.name)
                if s == 1:
                    raise self.lowering.error(
                        f"expected operands defined without a cycle, found '{child.name}' "
                        f"depending on itself", self.operand_offset(instr, child.name))
                if s is None:
                    state[child.name] = 1
                    stack.append((child, 0))
            else:
                state[instr.name] = 2
                out.append(instr)
        return out

    def lower(self, instr: Instruction) -> Tree:
        handler = CONVERTERS.get(instr.opcode)
        if handler is None:
            raise self.lowering.error(
                f"expected an opcode the compiler supports, found '{instr.opcode}' "
                "(neuronx-cc list-operators --framework XLA lists them)", instr.opcode_offset,
                E.UNSUPPORTED_OP)
        args = [self.env[name] for name in instr.operands]
        if instr.operand_shapes is not None:
            for name, shape, arg in zip(instr.operands, instr.operand_shapes, args,
                                        strict=True):
                if shape is not None and not self.matches(shape, arg):
                    raise self.lowering.error(
                        f"expected operand '{name}' to have the shape it is defined with "
                        f"({self.describe(arg)}), found {shape}",
                        self.operand_offset(instr, name))
        cx = InstrContext(instr, args, self.b, self.lowering,
                          [self.by_name[name].shape for name in instr.operands])
        tree = handler(cx)
        if not self.matches(instr.shape, tree):
            raise self.lowering.error(
                f"expected {instr.opcode} '{instr.name}' to have the shape its operands and "
                f"attributes give ({self.describe(tree)}), found {instr.shape}", instr.offset)
        if isinstance(tree, Value) and tree.name is None:
            tree.name = instr.name
        return tree

    @staticmethod
    def matches(shape: Shape, tree: Tree) -> bool:
        if isinstance(shape, ArrayShape):
            if shape.dtype == "token":
                return tree is TOKEN
            return (isinstance(tree, Value) and tree.type.shape == shape.dims
                    and tree.type.dtype.value == shape.dtype)
        return (isinstance(tree, tuple) and len(tree) == len(shape.elements)
                and all(FunctionLowering.matches(s, t)
                        for s, t in zip(shape.elements, tree, strict=True)))

    @staticmethod
    def describe(tree: Tree) -> str:
        if isinstance(tree, Value):
            return str(tree.type)
        if isinstance(tree, tuple):
            return "(" + ", ".join(FunctionLowering.describe(t) for t in tree) + ")"
        return "token[]"
