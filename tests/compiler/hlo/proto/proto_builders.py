"""Small HloModuleProtos built by hand with the declared schema, for the tests that need a
module JAX would never write (malformed ones, rare fields)."""

from __future__ import annotations

from google.protobuf.message import Message

from nxcc.compiler.hlo.proto.schema import message_class

F32, S32, PRED, TUPLE = 11, 4, 1, 13


def shape(element_type: int, dims: tuple[int, ...], minor_to_major: tuple[int, ...] | None
          = None) -> Message:
    s = message_class("ShapeProto")(element_type=element_type, dimensions=list(dims))
    if dims:
        m2m = minor_to_major if minor_to_major is not None else tuple(range(len(dims)))[::-1]
        s.layout.minor_to_major.extend(m2m)
    return s


def instr(iid: int, name: str, opcode: str, sh: Message, operands: tuple[int, ...] = (),
          **fields: object) -> Message:
    p = message_class("HloInstructionProto")(id=iid, name=name, opcode=opcode,
                                             operand_ids=list(operands), **fields)
    p.shape.CopyFrom(sh)
    return p


def computation(cid: int, name: str, instrs: list[Message], root_id: int) -> Message:
    return message_class("HloComputationProto")(id=cid, name=name, instructions=instrs,
                                                root_id=root_id)


def module(comps: list[Message], entry_id: int, name: str = "m") -> Message:
    return message_class("HloModuleProto")(name=name, computations=comps,
                                           entry_computation_id=entry_id)


def tiny() -> Message:
    """ENTRY main { p = f32[2,3] parameter(0); c = f32[2,3] constant({{1,2,3},{4,5,6}});
    ROOT add = f32[2,3] add(p, c) } with the constant stored column-major ({0,1})."""
    lit = message_class("LiteralProto")(f32s=[1, 4, 2, 5, 3, 6])
    lit.shape.CopyFrom(shape(F32, (2, 3), (0, 1)))
    instrs = [instr(1, "p", "parameter", shape(F32, (2, 3))),
              instr(2, "c", "constant", shape(F32, (2, 3), (0, 1)), literal=lit),
              instr(3, "add", "add", shape(F32, (2, 3)), (1, 2))]
    return module([computation(7, "main", instrs, 3)], 7)


TINY_TEXT = """HloModule m

ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{0,1} constant({ { 1, 2, 3 }, { 4, 5, 6 } })
  ROOT add = f32[2,3]{1,0} add(p, c)
}
"""
