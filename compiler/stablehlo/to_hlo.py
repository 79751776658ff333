"""MLIR syntax tree -> the HLO syntax tree (`compiler.hlo.nodes`), so that StableHLO text is
lowered by the very code that lowers HLO text.

Functions become computations (the entry is ``main``, else the first public function);
regions become computations of their own: reduce/sort/scatter/reduce_window/select_and_scatter
bodies take their block arguments as parameters; ``stablehlo.while`` becomes a while over a
tuple of its operands and the outer values its regions use; ``stablehlo.case`` /
``stablehlo.if`` become conditionals whose branch ``i`` takes the outer values branch ``i``
uses (one value directly, several as a tuple). Argument ``mhlo.sharding`` (and Shardy's
``sdy.sharding``, through the module's mesh) become the parameters' ``sharding``, result
ones the root's.
"""

from __future__ import annotations

import re

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.nodes import (
    ArrayShape,
    Attribute,
    Computation,
    HloModule,
    Shape,
    TupleShape,
)
from nxcc.compiler.stablehlo import chlo, collectives, control, ops  # noqa: F401  (converters)
from nxcc.compiler.stablehlo.builder import CompBuilder, FreshNames, hlo_name
from nxcc.compiler.stablehlo.registry import convert_op
from nxcc.compiler.stablehlo.sdy import sdy_to_hlo_sharding
from nxcc.compiler.stablehlo.syntax import Block, Func, HashAttr, MlirModule, Op
from nxcc.ir.sharding_notation.cursor import PieceError
from nxcc.ir.sharding_notation.hlo_sharding import parse_sharding

RETURNS = frozenset({"return", "func.return", "stablehlo.return", "mhlo.return"})


def to_hlo(mod: MlirModule, source: Source) -> HloModule:
    """The HLO module `mod` means (HloError for what has no HLO counterpart)."""
    return ModuleConverter(mod, source).run()


def _comp_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name) or "fn"


class ModuleConverter:
    """Converts every function; region computations are named after their function."""

    def __init__(self, mod: MlirModule, source: Source) -> None:
        self.mod = mod
        self.source = source
        self.computations: list[Computation] = []
        self.func_names: dict[str, str] = {}
        self.unique = FreshNames().fresh  # computation names of the module
        self.funcs = {f.name: f for f in mod.funcs}

    def run(self) -> HloModule:
        entry = self.funcs.get("main") or next(
            (f for f in self.mod.funcs if f.visibility == "public"), self.mod.funcs[0])
        for f in self.mod.funcs:
            self.func_names[f.name] = self.unique(_comp_name(f.name))
        for f in self.mod.funcs:
            if f.body is not None:
                self.computations.append(self.function(f, f is entry))
        comp = next(c for c in self.computations if c.is_entry) if entry.body else None
        if comp is None:
            raise HloError(f"expected a body for the entry function @{entry.name}, found a "
                           "declaration", self.source, entry.offset, E.SEMANTIC)
        attrs = {k: Attribute(k, v, str(v), self.mod.offset) for k, v in self.mod.attrs.items()}
        return HloModule(self.mod.name, attrs, self.computations, comp, {}, self.source,
                         self.mod.offset)

    def callee(self, name: str, offset: int) -> str:
        """The computation name of function @name."""
        f = self.funcs.get(name)
        if f is None or f.body is None:
            what = "a declaration without a body" if f is not None else "no such function"
            raise HloError(f"expected a function of the module for @{name}, found {what}",
                           self.source, offset, E.SEMANTIC)
        return self.func_names[name]

    # -- functions ---------------------------------------------------------------------
    def function(self, f: Func, is_entry: bool) -> Computation:
        b = CompBuilder(self, self.func_names[f.name])
        for k, (arg, shape, attrs) in enumerate(f.args):
            b.parameter(arg, shape, k)
            sharding = self.sharding_of(attrs, len(shape.dims)
                                        if isinstance(shape, ArrayShape) else 0)
            if sharding is not None:
                b.instrs[-1].attrs["sharding"] = sharding
        assert f.body is not None
        comp = b.finish(self.block(b, f.body), f.offset, is_entry=is_entry)
        if is_entry:
            self.result_shardings(comp, f)
        comp.is_entry = is_entry
        return comp

    def sharding_text(self, attrs: dict[str, object], rank: int) -> object:
        """The HLO sharding text of an argument's or result's ``mhlo.sharding`` or
        ``sdy.sharding`` (None when it has neither or it says nothing in HLO terms)."""
        text = attrs.get("mhlo.sharding")
        sdy = attrs.get("sdy.sharding")
        if text is None and isinstance(sdy, HashAttr):
            text = sdy_to_hlo_sharding(sdy, self.mod.meshes, rank)
        return text

    def sharding_of(self, attrs: dict[str, object], rank: int) -> Attribute | None:
        text = self.sharding_text(attrs, rank)
        if not isinstance(text, str):
            return None
        try:
            return Attribute("sharding", parse_sharding(text), text, self.mod.offset)
        except PieceError as exc:
            raise HloError(f"expected an HLO sharding in mhlo.sharding, found {text!r}: "
                           f"{exc.message}", self.source, self.mod.offset, E.SEMANTIC) from None

    def result_shardings(self, comp: Computation, f: Func) -> None:
        texts = [self.sharding_text(a, len(shape.dims) if isinstance(shape, ArrayShape) else 0)
                 for shape, a in f.results]
        if not any(isinstance(t, str) for t in texts):
            return
        root = comp.root
        whole = [t if isinstance(t, str) else "{replicated}" for t in texts]
        text = whole[0] if not root.shape.is_tuple else "{" + ", ".join(whole) + "}"
        root.attrs["sharding"] = Attribute("sharding", parse_sharding(text), text, f.offset)

    # -- blocks and regions ------------------------------------------------------------
    def block(self, b: CompBuilder, block: Block) -> list[str]:
        """Convert the ops of `block` into `b`; the HLO names of the returned values."""
        for op in block.ops:
            if op.name in RETURNS:
                return [b.ref(o, at) for o, at in b.operand_pairs(op, op.operands)]
            convert_op(b, op)
        raise HloError("expected a return at the end of the block, found none", self.source,
                       block.offset, E.SYNTAX)

    def region(self, parent: CompBuilder, op: Op, k: int, what: str,
               arg_names: list[str] | None = None) -> str:
        """A computation of region `k` of `op` taking its block arguments as parameters
        (`arg_names` when the pretty form names them); outer values are not visible."""
        if k >= len(op.regions):
            raise HloError(f"expected a {what} region for {op.name}, found {len(op.regions)} "
                           "regions", self.source, op.offset, E.SYNTAX)
        block = op.regions[k][0]
        b = CompBuilder(self, self.unique(f"{parent.name}.{what}"))
        for j, (arg, shape) in enumerate(block.args):
            b.parameter(arg, shape, j)
        comp = b.finish(self.block(b, block), block.offset)
        self.computations.append(comp)
        return comp.name

    def capturing_region(self, parent: CompBuilder, block: Block, name: str,
                         params: list[tuple[str, Shape]], captured: list[str],
                         loop: bool) -> str:
        """A computation of `block` taking `params` (MLIR name, shape) then the outer values
        `captured`: one value directly, several (or any, for a `loop` body or condition) as
        a tuple. A loop body returns its results then the captured values unchanged."""
        everything = [*params, *[(v, parent.shape_of(v, block.offset)) for v in captured]]
        b = CompBuilder(self, self.unique(name))
        if len(everything) == 1 and not loop:
            b.parameter(everything[0][0], everything[0][1], 0)
        else:
            whole = b.parameter("%param", TupleShape(tuple(s for _, s in everything)), 0)
            for j, (v, s) in enumerate(everything):
                b.bind(v, b.add("get-tuple-element", s, [whole], {"index": j}, None,
                                hlo_name(v)))
        returned = self.block(b, block)
        is_body = loop and len(returned) == len(params)
        if is_body:
            returned = returned + [b.names[v] for v in captured]
        comp = b.finish(returned, block.offset, tuple_always=is_body)
        self.computations.append(comp)
        return comp.name
