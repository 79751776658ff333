"""XLA programs as a binary serialized ``HloModuleProto`` (``.pb``, ``.hlo.pb``,
``.hlo_module.pb``), as libneuronxla / torch-neuronx hand them to neuronx-cc and as
``jax.jit(f).lower(x).compiler_ir("hlo").as_serialized_hlo_module_proto()`` writes them.

    from nxcc.compiler.hlo.proto import parse_hlo_proto, load_hlo_proto
    tree = parse_hlo_proto(data, "model.hlo.pb")     # bytes -> HloModule (the text's tree)
    tree = load_hlo_proto("model.hlo.pb")            # None when the file is HLO text

The module is decoded with the protobuf runtime onnx brings, against the schema declared
in `schema.py`, and converted (`to_nodes.py`) to the syntax tree HLO text gives, so the
lowering is the text's: both forms of a program give the same IR.
"""

from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import HloModule
from nxcc.compiler.hlo.proto.schema import HloMessage, message_class
from nxcc.compiler.hlo.proto.to_nodes import ProtoSource, module_from_proto

#: protobuf's own limit on a serialized message.
MAX_BYTES = 2**31 - 1


def _try_decode(data: bytes) -> tuple[HloMessage | None, str]:
    """(the module in `data`, '') or (None, why not): an HloModuleProto, else the module of
    an HloProto (XLA's dump form)."""
    try:
        module = message_class("HloModuleProto").FromString(data)
        if module.computations:
            return module, ""
    except (DecodeError, RecursionError, ValueError) as exc:
        module, why = None, str(exc) or type(exc).__name__
    else:
        why = ""
    try:
        wrapped = message_class("HloProto").FromString(data)
    except (DecodeError, RecursionError, ValueError):
        return module, why
    if wrapped.hlo_module.computations:
        return wrapped.hlo_module, ""
    return module, why


def decode(data: bytes, source: str = "<hlo proto>") -> HloMessage:
    """The HloModuleProto serialized in `data` (alone or in an HloProto); HloError
    (NCC_EFRM001) when it is not one."""
    if len(data) > MAX_BYTES:
        raise HloError(f"expected a serialized HloModuleProto of at most 2 GiB, found "
                       f"{len(data)} bytes", ProtoSource("", source), 0, E.SYNTAX)
    module, why = _try_decode(data)
    if module is None:
        raise HloError(f"expected a serialized HloModuleProto, found bytes that do not "
                       f"decode as one ({why})", ProtoSource("", source), 0, E.SYNTAX)
    return module


def parse_hlo_proto(data: bytes, source: str = "<hlo proto>") -> HloModule:
    """The syntax tree of the serialized HloModuleProto `data`; HloError naming `source`."""
    return module_from_proto(decode(data, source), source)


def looks_like_proto(data: bytes) -> bool:
    """Whether `data` is a serialized HloModuleProto rather than HLO text: it is not
    UTF-8 text, or it decodes as a module with an entry computation."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    if text.lstrip().startswith("HloModule"):
        return False
    m, _ = _try_decode(data)
    if m is None:
        return False
    ids = {c.id for c in m.computations}
    names = {c.name for c in m.computations}
    return bool(ids) and (m.entry_computation_id in ids or m.entry_computation_name in names)


def load_hlo_proto(path_or_data: str | bytes, source: str | None = None) -> HloModule | None:
    """The syntax tree of a serialized module given as bytes or as the path of a file that
    holds one (detected by content, whatever the extension); None for anything else (HLO
    text, or a string that is not a file's path)."""
    if isinstance(path_or_data, bytes | bytearray):
        return parse_hlo_proto(bytes(path_or_data), source or "<hlo proto>")
    if "\n" in path_or_data or len(path_or_data) > 4096 or not os.path.isfile(path_or_data):
        return None
    try:
        with open(path_or_data, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise HloError(f"cannot read {path_or_data!r}: {exc.strerror or exc}") from None
    if not looks_like_proto(data):
        return None
    return parse_hlo_proto(data, source or path_or_data)


__all__ = ["decode", "load_hlo_proto", "looks_like_proto", "parse_hlo_proto"]
