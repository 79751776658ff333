"""HloModuleProto -> the HLO syntax tree (`compiler.hlo.nodes`), the tree HLO text gives.

Ids become names: each instruction's operands and control predecessors are the names of
the instructions of its computation that `operand_ids` / `control_predecessor_ids` give,
`called_computation_ids` the names of computations of the module; `root_id` marks the
ROOT and `entry_computation_id` (else `entry_computation_name`) the ENTRY. An unnamed
instruction is called ``OPCODE.ID``. The header gets what HLO text prints there and the
proto holds: `entry_computation_layout`, `input_output_alias`, `frontend_attributes`, and
`num_partitions` / `replica_count` from the device assignment.

A proto whose ids do not resolve, whose shapes or literals do not hold together, or
without computations or entry is an `HloError` naming the computation and instruction;
cycles are found by the lowering, as for text. Errors carry no line: `ProtoSource` has none.
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.attributes import parse_attribute
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.nodes import Attribute, Computation, HloModule, Instruction, Shape
from nxcc.compiler.hlo.proto import text_forms as T
from nxcc.compiler.hlo.proto.attrs import AttrContext, attributes
from nxcc.compiler.hlo.proto.enums import ALIAS_KINDS
from nxcc.compiler.hlo.proto.literals import LiteralError, literal_value, supported
from nxcc.compiler.hlo.proto.schema import HloMessage
from nxcc.compiler.hlo.proto.shapes import ShapeError, shape_text, to_shape
from nxcc.ir.sharding_notation.cursor import PieceError


class ProtoSource(Source):
    """The source of a binary module: a name, no text, so errors have no line."""

    def line_col(self, offset: int) -> tuple[int, int]:
        return 0, 0


class _Builder:
    """One conversion; `fail` makes the errors."""

    def __init__(self, proto: HloMessage, source: ProtoSource) -> None:
        self.proto = proto
        self.src = source
        self.comp_names: dict[int, str] = {}
        self.shapes: dict[bytes, Shape] = {}  # shapes are immutable: one per distinct proto
        self.attr_cache: dict[tuple[str, str], object] = {}

    def fail(self, message: str, code: str = E.SYNTAX) -> HloError:
        return HloError(message, self.src, 0, code)

    def module(self) -> HloModule:
        m = self.proto
        if not m.computations:
            raise self.fail("expected a serialized HloModuleProto with computations, found "
                            "none")
        seen: set[str] = set()
        for c in m.computations:
            if c.id in self.comp_names:
                raise self.fail(f"expected each computation id once, found id {c.id} again "
                                f"(computation '{c.name}')")
            if not c.name or c.name in seen:
                raise self.fail(f"expected distinct computation names, found {c.name!r} "
                                f"(id {c.id})")
            seen.add(c.name)
            self.comp_names[c.id] = c.name
        computations = [self.computation(c) for c in m.computations]
        entry = computations[self.entry_index()]
        entry.is_entry = True
        return HloModule(m.name or "module", self.header(), computations, entry, {}, self.src)

    def entry_index(self) -> int:
        m = self.proto
        ids = [c.id for c in m.computations]
        if m.entry_computation_id in ids:
            i = ids.index(m.entry_computation_id)
            name = m.computations[i].name
            if m.entry_computation_name and m.entry_computation_name != name:
                raise self.fail(f"expected entry_computation_name '{name}' (computation "
                                f"{m.entry_computation_id}), found "
                                f"'{m.entry_computation_name}'")
            return i
        names = [c.name for c in m.computations]
        if m.entry_computation_name in names:
            return names.index(m.entry_computation_name)
        raise self.fail(f"expected an entry computation, found entry_computation_id "
                        f"{m.entry_computation_id} and entry_computation_name "
                        f"{m.entry_computation_name!r}, which name none of the "
                        f"{len(ids)} computations")

    def computation_name(self, cid: int) -> str:
        name = self.comp_names.get(cid)
        if name is None:
            raise T.ProtoFieldError(f"called computation id {cid} names no computation of "
                                    "the module")
        return name

    def shape(self, p: HloMessage) -> Shape:
        key = p.SerializeToString()
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = to_shape(p)
        return shape

    def computation(self, c: HloMessage) -> Computation:
        names: dict[int, str] = {}
        shapes: dict[int, Shape] = {}
        for p in c.instructions:
            name = p.name or f"{p.opcode}.{p.id}"
            if p.id in names:
                raise self.fail(f"computation '{c.name}': expected each instruction id once, "
                                f"found id {p.id} again ('{name}')")
            names[p.id] = name
            try:
                shapes[p.id] = self.shape(p.shape)
            except ShapeError as exc:
                raise self.fail(f"computation '{c.name}', instruction '{name}': {exc}",
                                exc.code) from None
        if not names:
            raise self.fail(f"expected at least one instruction in computation '{c.name}'",
                            E.SEMANTIC)
        if c.root_id not in names:
            raise self.fail(f"computation '{c.name}': root_id {c.root_id} names none of its "
                            "instructions")
        def instruction_name(iid: int) -> str:
            if iid not in names:
                raise T.ProtoFieldError(f"id {iid} names no instruction of computation "
                                        f"'{c.name}'")
            return names[iid]

        cx = AttrContext(self.computation_name, instruction_name, cache=self.attr_cache)
        instrs = [self.instruction(p, c, cx, names, shapes) for p in c.instructions]
        comp = Computation(c.name, instrs)
        if c.execution_thread and c.execution_thread != "main":
            raw = T.quote(c.execution_thread)
            comp.attrs["execution_thread"] = Attribute("execution_thread", c.execution_thread,
                                                       raw, 0)
        return comp

    def instruction(self, p: HloMessage, c: HloMessage, cx: AttrContext, names: dict[int, str],
                    shapes: dict[int, Shape]) -> Instruction:
        name = names[p.id]
        try:
            operand_ids = list(p.operand_ids)
            operands = [cx.instruction_name(i) for i in operand_ids]
            cx.operand_shapes = [shapes[i] for i in operand_ids]
            attrs = attributes(p, cx)
        except (T.ProtoFieldError, PieceError, ValueError) as exc:
            message = exc.message if isinstance(exc, PieceError) else str(exc)
            raise self.fail(f"computation '{c.name}', instruction '{name}' ({p.opcode}): "
                            f"{message}", E.SEMANTIC) from None
        if not p.opcode:
            raise self.fail(f"computation '{c.name}', instruction '{name}': expected an "
                            "opcode, found none")
        instr = Instruction(name, shapes[p.id], p.opcode, operands, attrs,
                            root=p.id == c.root_id)
        if p.opcode == "parameter":
            instr.parameter_number = int(p.parameter_number)
        elif p.opcode == "constant" and supported(instr.shape):
            try:
                instr.literal = literal_value(p.literal, instr.shape)
            except LiteralError as exc:
                raise self.fail(f"computation '{c.name}', instruction '{name}': {exc}",
                                E.SEMANTIC) from None
        return instr

    def header(self) -> dict[str, Attribute]:
        m = self.proto
        texts: list[tuple[str, str]] = []
        layout = self.entry_layout()
        if layout:
            texts.append(("entry_computation_layout", layout))
        if m.input_output_alias.entries:
            texts.append(("input_output_alias", _aliases(m.input_output_alias)))
        if m.frontend_attributes.map:
            texts.append(("frontend_attributes", T.key_values(dict(m.frontend_attributes.map))))
        if m.device_assignment.computation_count > 1:
            texts.append(("num_partitions", str(m.device_assignment.computation_count)))
        if m.device_assignment.replica_count > 1:
            texts.append(("replica_count", str(m.device_assignment.replica_count)))
        out = {}
        for name, raw in texts:
            try:
                out[name] = Attribute(name, parse_attribute(name, raw), raw, 0)
            except PieceError as exc:
                raise self.fail(f"module header {name}: {exc.message}", E.SEMANTIC) from None
        return out

    def entry_layout(self) -> str:
        ps = self.proto.host_program_shape
        if not ps.parameters and not ps.HasField("result"):
            return ""
        try:
            params = ", ".join(shape_text(to_shape(s)) for s in ps.parameters)
            result = shape_text(to_shape(ps.result))
        except ShapeError:
            return ""  # the header's copy of the entry's shapes; never read
        return "{(" + params + ")->" + result + "}"


def _aliases(alias: HloMessage) -> str:
    """`{ {0}: (0, {}, may-alias), ... }` as the header prints input_output_alias."""
    parts = []
    for e in alias.entries:
        out = "{" + ",".join(map(str, e.output_shape_index)) + "}"
        param = "{" + ",".join(map(str, e.parameter_shape_index)) + "}"
        parts.append(f"{out}: ({e.parameter_number}, {param}, "
                     f"{ALIAS_KINDS.get(e.kind, 'may-alias')})")
    return "{ " + ", ".join(parts) + " }"


def module_from_proto(proto: HloMessage, source: str = "<hlo proto>") -> HloModule:
    """The syntax tree of the decoded HloModuleProto `proto`; HloError naming `source`."""
    return _Builder(proto, ProtoSource("", source)).module()
