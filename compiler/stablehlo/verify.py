"""The checks MLIR's own verifier makes on a parsed StableHLO module, before conversion.

`verify_module(mod, source)` raises the frontend's positioned `HloError` (`NCC_EFRM002`,
as HLO text's "expected a new instruction name") for:

- a symbol defined twice (two `func.func @f`);
- an SSA value defined twice: a name is defined once in its function, and a region may use
  the values around it but not define their names again (sibling regions may reuse names,
  MLIR's scoping);
- a block whose terminator (`return`, `stablehlo.return`) is missing, not last, or repeated;
- an operand type annotation that contradicts the value's definition: the functional type
  `(T, ...) -> ...` of an op (generic form, or pretty forms that print it) lists its
  operands' types in order, and a `return ... : T` its returned values';
- a `call` whose operand or result types differ from the callee's signature;
- a function whose body returns values of other types (or another number of them) than
  its signature declares, or whose generic form's block arguments differ from its type.

Result types an op annotates are checked against what its operands give by the lowering
(`compiler.hlo`), as for HLO text.
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.nodes import Shape
from nxcc.compiler.stablehlo.syntax import Block, Func, MlirModule, Op

RETURNS = frozenset({"return", "func.return", "stablehlo.return", "mhlo.return"})
CALLS = frozenset({"call", "func.call"})


def verify_module(mod: MlirModule, source: Source) -> MlirModule:
    """`mod`, after the checks of the module docstring (HloError at the first failure)."""
    Verifier(mod, source).run()
    return mod


class Verifier:
    """One walk over every function: the values in scope with their types."""

    def __init__(self, mod: MlirModule, source: Source) -> None:
        self.mod = mod
        self.source = source
        self.funcs: dict[str, Func] = {}
        self.types: dict[str, Shape | None] = {}

    def error(self, message: str, offset: int) -> HloError:
        return HloError(message, self.source, offset, E.SEMANTIC)

    def run(self) -> None:
        for f in self.mod.funcs:
            if f.name in self.funcs:
                raise self.error(f"expected a new function name, found @{f.name} again",
                                 f.offset)
            self.funcs[f.name] = f
        for f in self.mod.funcs:
            if f.body is not None:
                self.function(f)

    def function(self, f: Func) -> None:
        assert f.body is not None
        self.types = {}  # a function is isolated from above
        body = f.body
        if body.args:
            declared = [t for _, t, _ in f.args]
            found = [t for _, t in body.args]
            if found != declared:
                raise self.error(f"expected the entry block of @{f.name} to take "
                                 f"{_types(declared)}, found {_types(found)}", body.offset)
        else:
            for name, ty, _ in f.args:
                self.define(name, ty, f.offset)
        self.block(body, [t for t, _ in f.results], f"@{f.name}")

    def define(self, name: str, ty: Shape | None, offset: int) -> None:
        if name in self.types:
            raise self.error(f"expected a new value name, found '{name}' defined again",
                             offset)
        self.types[name] = ty

    def block(self, block: Block, returns: list[Shape] | None, owner: str) -> None:
        """Check `block` (its arguments defined here, removed after); `returns` are the
        types its terminator must return (a function's), None for an op's region."""
        defined = []
        for name, ty in block.args:
            self.define(name, ty, block.offset)
            defined.append(name)
        for k, op in enumerate(block.ops):
            if op.name in RETURNS:
                if k != len(block.ops) - 1:
                    after = block.ops[k + 1]
                    raise self.error(f"expected the {op.name} to end its block, found "
                                     f"{after.name} after it", after.offset)
                self.terminator(op, returns, owner)
                break
            self.operation(op)
            defined.extend(op.results)
        else:
            raise self.error(f"expected a return at the end of the block of {owner}, found "
                             "none", block.offset)
        for name in defined:  # a region's names go out of scope with it
            self.types.pop(name, None)

    def operation(self, op: Op) -> None:
        operands = [*op.operands, *op.inits]
        found = [self.types.get(v) for v in operands]
        if op.in_types is not None and len(op.in_types) == len(operands):
            for k, (v, want, have) in enumerate(zip(operands, op.in_types, found,
                                                    strict=True)):
                if have is not None and have != want:
                    raise self.error(f"expected operand {k} of {op.name} to be {want} as "
                                     f"its type says, found {v} of type {have}",
                                     _at(op, k))
        if op.name in CALLS and op.callee in self.funcs:
            self.call(op, found)
        for region in op.regions:
            for block in region:
                self.block(block, None, op.name)
        results = op.out_types if len(op.out_types) == len(op.results) else \
            [None] * len(op.results)
        for name, ty in zip(op.results, results, strict=True):
            self.define(name, ty, op.offset)

    def call(self, op: Op, found: list[Shape | None]) -> None:
        callee = self.funcs[str(op.callee)]
        declared = [t for _, t, _ in callee.args]
        if len(found) != len(declared) or any(
                have is not None and have != want for have, want in
                zip(found, declared, strict=False)):
            raise self.error(f"expected the operands of the call to @{callee.name} to be "
                             f"{_types(declared)}, found {_types(found)}", op.offset)
        results = [t for t, _ in callee.results]
        if op.out_types and op.out_types != results:
            raise self.error(f"expected the call to @{callee.name} to return "
                             f"{_types(results)} as its signature says, found "
                             f"{_types(op.out_types)}", op.offset)

    def terminator(self, op: Op, returns: list[Shape] | None, owner: str) -> None:
        found = [self.types.get(v) for v in op.operands]
        annotated = op.out_types
        if annotated and len(annotated) == len(found):
            for k, (v, want, have) in enumerate(zip(op.operands, annotated, found,
                                                    strict=True)):
                if have is not None and have != want:
                    raise self.error(f"expected {v} to be {want} as the {op.name} says, "
                                     f"found {have}", _at(op, k))
        if returns is not None and (len(found) != len(returns) or any(
                have is not None and have != want
                for have, want in zip(found, returns, strict=True))):
            raise self.error(f"expected {owner} to return {_types(returns)} as its signature "
                             f"says, found {_types(found)}", op.offset)


def _at(op: Op, k: int) -> int:
    return op.operand_offsets[k] if k < len(op.operand_offsets) else op.offset


def _types(types: list[Shape] | list[Shape | None]) -> str:
    return "(" + ", ".join("?" if t is None else str(t) for t in types) + ")"
