"""The IR's graph objects: values, ops, functions and the module.

Graph objects are mutable and compared by identity. Every `Value` has a `TensorType`; it is
either a function parameter (``owner is None``) or result number ``index`` of the op
``owner``. Ops refer to other functions of the module by `Symbol` attributes (the reduction
computation of ``reduce``, the body of ``while``...), as HLO does; there are no nested regions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nxcc.ir.attributes import AttrValue
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.sharding import Sharding
from nxcc.ir.spmd import MeshLayouts, SpmdInfo
from nxcc.ir.types import TensorType


class Value:
    """An SSA value: a function parameter or one result of an op.

    `sharding` says how the value is laid out over the cores of a logical core (see
    `ir.sharding`); None until a sharding pass (or the IR text) sets it.
    """

    __slots__ = ("type", "name", "owner", "index", "sharding")

    def __init__(
        self, type_: TensorType, name: str | None = None, owner: Op | None = None, index: int = 0
    ) -> None:
        self.type = type_
        self.name = name
        self.owner = owner
        self.index = index
        self.sharding: Sharding | None = None

    def __repr__(self) -> str:
        return f"Value({self.name or '?'}: {self.type})"


class Op:
    """One operation: its definition, operand values, result values and typed attributes.

    `opdef` is the op's definition (a constant of `nxcc.ir.ops`); code that asks which op
    this is compares it by identity (``op.opdef is ops.add``). `opcode`, the definition's
    text name, is for printing and messages. An op may be made from a text name (the
    parser's way); the name is looked up once, here.

    Build ops through `ir.builder.Builder`, which checks the attributes against the op's
    definition and infers the result types.
    """

    __slots__ = ("opdef", "operands", "results", "attrs")

    def __init__(
        self,
        opcode: str | OpDef,
        operands: Sequence[Value],
        result_types: Sequence[TensorType],
        attrs: Mapping[str, AttrValue] | None = None,
        result_names: Sequence[str | None] | None = None,
    ) -> None:
        self.opdef: OpDef = get_opdef(opcode) if isinstance(opcode, str) else opcode
        self.operands: list[Value] = list(operands)
        self.attrs: dict[str, AttrValue] = dict(attrs or {})
        names = list(result_names) if result_names else [None] * len(result_types)
        self.results: list[Value] = [
            Value(t, names[i], self, i) for i, t in enumerate(result_types)
        ]

    @property
    def opcode(self) -> str:
        """The op's text name (the IR text's and the NEFF program's), for printing."""
        return self.opdef.name

    @property
    def result(self) -> Value:
        """The only result; AssertionError for ops with several."""
        assert len(self.results) == 1, f"{self.opcode} has {len(self.results)} results"
        return self.results[0]

    def __repr__(self) -> str:
        return f"Op({self.opcode}, {len(self.operands)} operands)"


@dataclass(eq=False)
class Function:
    """A named function: parameters, a body of ops in order, and the returned values.

    `result_names` are the external names of the results (the NEFF's output names) or empty
    for internal functions (reduction computations, loop bodies...).
    """

    name: str
    params: list[Value]
    body: list[Op] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    result_names: list[str] = field(default_factory=list)

    @property
    def param_types(self) -> list[TensorType]:
        return [p.type for p in self.params]

    @property
    def result_types(self) -> list[TensorType]:
        return [r.type for r in self.results]


@dataclass(eq=False)
class Module:
    """A set of functions, one of which (`entry`) is the program; the others are called.

    `spmd` is set on a program already partitioned for N ranks (see `ir.spmd`);
    `mesh_layouts` on a global program whose shardings name a mesh of N > 1 devices.
    `input_output_alias` pairs (result index, parameter index) of the entry whose buffers a
    caller may reuse from one execution to the next (HLO's donated arguments).
    """

    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    entry: str = "main"
    spmd: SpmdInfo | None = None
    input_output_alias: list[tuple[int, int]] = field(default_factory=list)
    mesh_layouts: MeshLayouts | None = None

    @property
    def entry_function(self) -> Function:
        return self.functions[self.entry]

    def add_function(self, fn: Function) -> Function:
        if fn.name in self.functions:
            raise ValueError(f"module already has a function @{fn.name}")
        self.functions[fn.name] = fn
        return fn

    def unique_function_name(self, base: str) -> str:
        """`base`, or `base_N` for the first N that no function uses yet."""
        if base not in self.functions:
            return base
        n = 1
        while f"{base}_{n}" in self.functions:
            n += 1
        return f"{base}_{n}"
