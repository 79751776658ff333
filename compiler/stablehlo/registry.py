"""Op name -> converter. ops.py and control.py register theirs with `converts`."""

from __future__ import annotations

from collections.abc import Callable

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.stablehlo.attrs import AttrReader
from nxcc.compiler.stablehlo.builder import CompBuilder
from nxcc.compiler.stablehlo.syntax import Op
from nxcc.ir.registry import Registry

Converter = Callable[[CompBuilder, Op, AttrReader], None]

#: StableHLO (or CHLO) op name -> its converter.
CONVERTERS: Registry[str, Converter] = Registry("StableHLO converter")

#: ``@converts("stablehlo.add", ...)`` registers the decorated function as the converter of
#: those ops.
converts = CONVERTERS.register


def convert_op(b: CompBuilder, op: Op) -> None:
    """Append the HLO instructions of `op` to `b` (HloError for an op with no converter)."""
    fn = CONVERTERS.get(op.name)
    if fn is None:
        raise HloError(f"expected an operation the compiler supports, found '{op.name}' "
                       "(docs/xla-inputs.md lists them)", b.conv.source, op.offset,
                       E.UNSUPPORTED_OP)
    fn(b, op, AttrReader(op, b.conv.source))
