"""Point to point: HLO's send, send-done, recv and recv-done as the IR's send / send_done /
recv / recv_done, with the channel id and the (source, target) pairs JAX writes in the
frontend attribute ``_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"``.

HLO shapes: ``send(data, token) -> (data, u32[] context, token)``, ``send-done(send) ->
token``, ``recv(token) -> (data, u32[] context, token)``, ``recv-done(recv) -> (data,
token)``. The data element of send and recv is the buffer, not a result to read: a send's is
its operand, a recv's zeros (the value arrives at recv-done). These instructions act beyond
their results, so the lowering keeps them even when the root does not depend on them
(`lower.FunctionLowering`), in program order: every send is issued before the receives the
root waits for.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from nxcc.compiler.hlo.context import TOKEN, InstrContext, Tree
from nxcc.compiler.hlo.lower_control import zeros
from nxcc.compiler.hlo.nodes import TupleShape
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops

PAIRS_ATTRIBUTE = "_xla_send_recv_source_target_pairs"
#: HLO opcodes lowered even when the root does not depend on them.
SIDE_EFFECT_OPCODES = frozenset({"send", "send-done", "recv", "recv-done"})
_PAIR = re.compile(r"\{\s*(\d+)\s*,\s*(\d+)\s*\}")


def pairs(cx: InstrContext) -> tuple[tuple[int, int], ...]:
    """The (source, target) pairs of a send or recv."""
    attrs = cx.attr_as("frontend_attributes", MappingProxyType, MappingProxyType({}))
    text = attrs.get(PAIRS_ATTRIBUTE)
    if text is None:
        raise cx.error(f"expected frontend_attributes={{{PAIRS_ATTRIBUTE}=\"{{{{0,1}}}}\"}} "
                       f"saying which rank sends to which, found none")
    found = tuple((int(a), int(b)) for a, b in _PAIR.findall(str(text)))
    if not found:
        raise cx.attr_error("frontend_attributes", f"expected {PAIRS_ATTRIBUTE} as "
                            f"{{{{source,target}},...}}, found {text!r}")
    return found


def _p2p_attrs(cx: InstrContext) -> dict[str, object]:
    return {"source_target_pairs": pairs(cx), "channel_id": cx.attr("channel_id", 0)}


@converts("send")
def lower_send(cx: InstrContext) -> Tree:
    data = cx.value(0)
    context = cx.emit1(ops.send, [data], _p2p_attrs(cx))
    return (data, context, TOKEN)


@converts("send-done")
def lower_send_done(cx: InstrContext) -> Tree:
    send = cx.args[0]
    cx.emit1(ops.send_done, [send[1]])  # type: ignore[index]
    return TOKEN


@converts("recv")
def lower_recv(cx: InstrContext) -> Tree:
    shape = cx.instr.shape
    if not isinstance(shape, TupleShape) or len(shape.elements) != 3:
        raise cx.error(f"expected recv to have the shape (data, u32[], token[]), found {shape}")
    context = cx.emit1(ops.recv, [], _p2p_attrs(cx))
    return (zeros(cx, shape.elements[0]), context, TOKEN)


@converts("recv-done")
def lower_recv_done(cx: InstrContext) -> Tree:
    recv = cx.args[0]
    if not isinstance(recv, tuple) or len(recv) != 3 or recv[1].owner is None \
            or recv[1].owner.opdef is not ops.recv:
        raise cx.error("expected the operand of recv-done to be a recv")
    buffer, context = recv[0], recv[1]
    started = context.owner.attrs
    attrs = {"source_target_pairs": started["source_target_pairs"],
             "channel_id": started["channel_id"], "dtype": buffer.type.dtype,
             "shape": buffer.type.shape}
    return (cx.emit1(ops.recv_done, [context], attrs), TOKEN)
