"""A malformed HloModuleProto is one `HloError` line with an NCC code (never a traceback):
bytes that do not decode, ids that do not resolve, no entry, cycles, literals and shapes
that do not hold together."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import Message

from nxcc.compiler.hlo import HloError, import_hlo
from nxcc.compiler.hlo.proto import looks_like_proto, parse_hlo_proto
from nxcc.compiler.hlo.proto.schema import message_class
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.compiler.hlo.proto.proto_builders import (
    F32,
    TUPLE,
    computation,
    instr,
    module,
    shape,
    tiny,
)

FIXTURE = REPO / "tests/compiler/hlo/fixtures/proto/mlp.lowered.hlo.pb"


def _no_computations(m: Message) -> None:
    del m.computations[:]


def _no_entry(m: Message) -> None:
    m.entry_computation_id = 99
    m.entry_computation_name = "nope"


def _bad_operand(m: Message) -> None:
    m.computations[0].instructions[2].operand_ids[1] = 42


def _bad_root(m: Message) -> None:
    m.computations[0].root_id = 9


def _duplicate_id(m: Message) -> None:
    m.computations[0].instructions[1].id = 1


def _cycle(m: Message) -> None:
    m.computations[0].instructions[2].operand_ids[1] = 3  # add uses itself


def _short_literal(m: Message) -> None:
    del m.computations[0].instructions[1].literal.f32s[-1]


def _dynamic(m: Message) -> None:
    m.computations[0].instructions[0].shape.is_dynamic_dimension.extend([True, False])


def _unknown_type(m: Message) -> None:
    m.computations[0].instructions[0].shape.element_type = 99


def _unknown_opcode(m: Message) -> None:
    m.computations[0].instructions[2].opcode = "fft"


def _bad_called(m: Message) -> None:
    m.computations[0].instructions[2].opcode = "call"
    m.computations[0].instructions[2].called_computation_ids.append(5)


def _calls_itself(m: Message) -> None:
    body = computation(3, "f", [instr(1, "x", "parameter", shape(F32, (2, 3))),
                                instr(2, "y", "call", shape(F32, (2, 3)), (1,),
                                      called_computation_ids=[3])], 2)
    m.computations.insert(0, body)
    m.computations[1].instructions[2].opcode = "call"
    m.computations[1].instructions[2].called_computation_ids.append(3)
    del m.computations[1].instructions[2].operand_ids[1:]


CASES: dict[str, tuple[Callable[[Message], None], str, str]] = {
    "no-computations": (_no_computations, "NCC_EFRM001", "with computations, found none"),
    "no-entry": (_no_entry, "NCC_EFRM001", "expected an entry computation"),
    "operand-id": (_bad_operand, "NCC_EFRM002", "id 42 names no instruction"),
    "root-id": (_bad_root, "NCC_EFRM001", "root_id 9 names none"),
    "duplicate-id": (_duplicate_id, "NCC_EFRM001", "each instruction id once"),
    "cycle": (_cycle, "NCC_EFRM002", "without a cycle"),
    "short-literal": (_short_literal, "NCC_EFRM002", "6 values for f32[2,3], found 5"),
    "dynamic-shape": (_dynamic, "NCC_EMOD025", "dynamic shape"),
    "element-type": (_unknown_type, "NCC_EFRM001", "PrimitiveType 99"),
    "opcode": (_unknown_opcode, "NCC_EUOC002", "'fft'"),
    "called-id": (_bad_called, "NCC_EFRM002", "computation id 5 names no computation"),
    "recursion": (_calls_itself, "NCC_EFRM002", "does not call itself"),
}


@pytest.mark.parametrize("case", CASES)
def test_malformed_module_is_one_line(case: str) -> None:
    change, code, fragment = CASES[case]
    m = tiny()
    change(m)
    with pytest.raises(HloError) as info:
        import_hlo(m.SerializeToString(), "bad.hlo.pb")
    err = info.value
    assert err.code == code, str(err)
    assert "\n" not in str(err) and str(err).startswith("bad.hlo.pb: "), str(err)
    assert fragment in str(err)


def test_the_hand_built_module_itself_is_fine() -> None:
    fn = import_hlo(tiny().SerializeToString()).entry_function
    assert [p.name for p in fn.params] == ["p"]


@pytest.mark.parametrize("data", [FIXTURE.read_bytes()[:700], bytes(range(256)) * 3,
                                  np.random.default_rng(0).bytes(4000)],
                         ids=["truncated", "bytes", "random"])
def test_bytes_that_are_no_module(data: bytes) -> None:
    with pytest.raises(HloError) as info:
        parse_hlo_proto(data, "x.pb")
    assert info.value.code == "NCC_EFRM001"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("depth, fragment", [(80, "nested more than 64 deep"),
                                             (200, "do not decode")])
def test_deep_tuple_shapes_are_refused_not_recursed(depth: int, fragment: str) -> None:
    """Past 64 levels the converter refuses the shape; past protobuf's nesting limit (100
    messages) the bytes do not decode."""
    inner = shape(F32, ()).SerializeToString()
    for _ in range(depth):  # ShapeProto{element_type: TUPLE, tuple_shapes: [inner]}
        inner = bytes([0x10, TUPLE, 0x22]) + _varint(len(inner)) + inner
    body = instr(1, "p", "parameter", shape(F32, ())).SerializeToString()
    body = body.replace(b"\x1a" + _varint(len(shape(F32, ()).SerializeToString()))
                        + shape(F32, ()).SerializeToString(), b"\x1a" + _varint(len(inner))
                        + inner)
    comp = computation(1, "main", [], 1).SerializeToString() + b"\x12" + _varint(len(body)) \
        + body
    data = module([], 1).SerializeToString() + b"\x1a" + _varint(len(comp)) + comp
    with pytest.raises(HloError) as info:
        parse_hlo_proto(data, "deep.pb")
    assert fragment in str(info.value) and "\n" not in str(info.value)


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def test_content_tells_proto_from_text() -> None:
    assert looks_like_proto(FIXTURE.read_bytes())
    assert not looks_like_proto(FIXTURE.with_suffix("").read_bytes())
    assert looks_like_proto(b"\xff\xfe not text")
    assert not looks_like_proto(b"// a comment, then no module")


@pytest.mark.parametrize("cut", [700, 3], ids=["truncated", "three-bytes"])
def test_the_cli_says_one_line_and_writes_nothing(cut: int, tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlo.pb"
    bad.write_bytes(b"\x80" + FIXTURE.read_bytes()[:cut])
    r = neuronx_cc("compile", str(bad), "--target", "trn1", "--output",
                   str(tmp_path / "bad.neff"), cwd=tmp_path)
    assert_one_line_error(r, "NCC_EFRM001", "bad.hlo.pb")
    assert not (tmp_path / "bad.neff").exists()


def test_a_module_inside_an_hlo_proto_is_read_too() -> None:
    """XLA's --xla_dump_hlo_as_proto writes an HloProto: the module and its buffers."""
    wrapped = message_class("HloProto")(hlo_module=tiny()).SerializeToString()
    wrapped += b"\x1a\x02\x08\x01"  # field 3, buffer_assignment: not read
    assert looks_like_proto(wrapped)
    assert parse_hlo_proto(wrapped).entry.name == "main"
