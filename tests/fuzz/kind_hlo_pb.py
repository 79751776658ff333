"""Binary HloModuleProto inputs (.hlo.pb): seeds from tests/compiler/hlo/fixtures/proto/ (JAX's
serialized modules, lowered and compiled); mutants change the parsed proto where the
frontend trusts it (instruction, operand, called-computation, root and entry ids;
computations dropped or duplicated; shapes: dims, element types, tuples nested deep;
opcode strings; literals whose values do not fit their shape), change any node of its JSON
form, or flip the serialized bytes; each goes through `compile`."""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from hypothesis import strategies as st

from nxcc.compiler.hlo.proto.schema import message_class
from tests.backend.neff.mutants import REPO
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, mutate_json

FIXTURES = REPO / "tests/compiler/hlo/fixtures/proto"
OPCODES = ("add", "multiply", "dot", "parameter", "constant", "tuple", "get-tuple-element",
           "while", "call", "conditional", "reduce", "custom-call", "fusion", "broadcast",
           "reshape", "transpose", "all-reduce", "sort", "", "frobnicate", "ADD", "add ")
ELEMENT_TYPES = tuple(range(-2, 34)) + (1 << 20,)
SEED_LIMIT = 12_000


def seeds(work: Path) -> list[bytes]:
    """The proto fixtures under 12 KB (most of them, lowered and compiled)."""
    return [p.read_bytes() for p in sorted(FIXTURES.glob("*.hlo.pb"))
            if p.stat().st_size < SEED_LIMIT]


def _module(raw: bytes) -> Message | None:
    module = message_class("HloModuleProto")()
    try:
        module.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError):
        return None
    return module if module.computations else None


def _instructions(module: Message) -> list[Message]:
    return [i for c in module.computations for i in c.instructions]


def _some_id(module: Message, data: st.DataObject) -> int:
    """An id hypothesis picks: an instruction's, a computation's, or an absurd one."""
    known = [i.id for i in _instructions(module)] + [c.id for c in module.computations]
    return data.draw(st.sampled_from(known + [-1, 0, 1 << 40, (1 << 63) - 1]))


def _deep_tuple(shape: Message, depth: int) -> None:
    inner = message_class("ShapeProto")()
    inner.CopyFrom(shape)
    for _ in range(depth):
        outer = message_class("ShapeProto")(element_type=13)  # TUPLE
        outer.tuple_shapes.append(inner)
        inner = outer
    shape.CopyFrom(inner)


def _shape(instr: Message, data: st.DataObject) -> None:
    shape = instr.shape
    what = data.draw(st.sampled_from(("dim", "rank", "type", "tuple")))
    if what == "dim" and shape.dimensions:
        i = data.draw(st.integers(0, len(shape.dimensions) - 1))
        shape.dimensions[i] = data.draw(st.sampled_from(BOUNDARY_INTS[:13] + (-5, 3)))
    elif what == "rank":
        shape.dimensions.extend(data.draw(st.lists(st.sampled_from((1, 2, 7, 1 << 30)),
                                                   min_size=1, max_size=3)))
    elif what == "type":
        shape.element_type = data.draw(st.sampled_from(ELEMENT_TYPES))
    else:
        _deep_tuple(shape, data.draw(st.integers(1, 3000)))


def _targeted(module: Message, data: st.DataObject) -> None:
    """One change aimed at what the proto frontend trusts."""
    instrs = _instructions(module)
    instr = instrs[data.draw(st.integers(0, len(instrs) - 1))] if instrs else None
    what = data.draw(st.sampled_from(("id", "operand", "called", "root", "entry", "drop",
                                      "duplicate", "shape", "opcode", "literal", "param")))
    if what == "drop" and len(module.computations) > 0:
        del module.computations[data.draw(st.integers(0, len(module.computations) - 1))]
    elif what == "duplicate":
        c = module.computations[data.draw(st.integers(0, len(module.computations) - 1))]
        module.computations.add().CopyFrom(c)
    elif what == "root":
        c = module.computations[data.draw(st.integers(0, len(module.computations) - 1))]
        c.root_id = _some_id(module, data)
    elif what == "entry":
        module.entry_computation_id = _some_id(module, data)
        if data.draw(st.booleans()):
            module.entry_computation_name = data.draw(st.sampled_from(("", "nowhere")))
    elif instr is None:
        return
    elif what == "id":
        instr.id = _some_id(module, data)
    elif what == "operand":
        if instr.operand_ids and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(instr.operand_ids) - 1))
            instr.operand_ids[i] = _some_id(module, data)
        else:
            instr.operand_ids.append(_some_id(module, data))
    elif what == "called":
        instr.called_computation_ids.append(_some_id(module, data))
    elif what == "shape":
        _shape(instr, data)
    elif what == "opcode":
        instr.opcode = data.draw(st.sampled_from(OPCODES))
    elif what == "literal":
        instr.literal.f32s.extend([1.0] * data.draw(st.sampled_from((1, 3, 1000))))
        instr.literal.shape.CopyFrom(instr.shape)
    else:
        instr.parameter_number = data.draw(st.sampled_from(BOUNDARY_INTS[:13]))


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("targeted", "targeted", "targeted", "json", "bytes")),
                    label="how")
    module = None if how == "bytes" else _module(raw)
    if module is None:
        return mutate_bytes(raw, data)
    if how == "targeted":
        try:
            _targeted(module, data)
        except (ValueError, TypeError, IndexError):  # protobuf refused the value: keep it
            pass
        return module.SerializeToString()
    tree = json_format.MessageToDict(module)
    try:
        mutated = mutate_json(tree, data)
        fresh = message_class("HloModuleProto")()
        json_format.ParseDict(json.loads(json.dumps(mutated)), fresh)
    except (json_format.ParseError, ValueError, TypeError, RecursionError, AttributeError):
        return mutate_bytes(raw, data)
    return fresh.SerializeToString()


def commands(path: Path, work: Path) -> list[list[str]]:
    """`compile` as libneuronxla runs it (framework given), and detected from the content."""
    return [["compile", str(path), "--framework", "XLA", "--target", "trn1", "--output",
             str(work / "out.neff"), "--logfile", str(work / "log.txt"), "--no-cache"]]


KIND = Kind("hlo_pb", ".hlo.pb", seeds, mutate, commands)
