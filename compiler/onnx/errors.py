"""The frontend's one exception type and the NCC error codes it carries (defined in
`nxcc.errors`; named here where the frontend raises them).

Codes (the prefix mirrors neuronx-cc's ``NCC_E...`` diagnostics):

- ``NCC_EFRM001``: the model cannot be read or fails ``onnx.checker``;
- ``NCC_EFRM002``: a node is inconsistent (operand shapes, attributes) with its operator;
- ``NCC_EUOC002``: an unsupported ONNX operator (or operator domain);
- ``NCC_EUOC003``: an unsupported feature of a supported operator (a mode, an output);
- ``NCC_EDTY001``: a value of an element type the compiler has no type for;
- ``NCC_EMOD025``: a dynamic dimension, or a shape-like input not known at compile time;
- ``NCC_EARG001``: a bad ``--input-shape`` argument.
"""

from __future__ import annotations

from nxcc import errors
from nxcc.errors import CompileError

MALFORMED = errors.MALFORMED_MODEL
INVALID_NODE = errors.INVALID_MODEL
UNSUPPORTED_OP = errors.UNSUPPORTED_OPERATOR
UNSUPPORTED_FEATURE = errors.UNSUPPORTED_FEATURE
UNSUPPORTED_DTYPE = errors.UNSUPPORTED_DTYPE
DYNAMIC = errors.DYNAMIC_SHAPE
BAD_ARGUMENT = errors.BAD_ARGUMENT


class FrontendError(CompileError):
    """A model the frontend cannot compile: a one-line message and an NCC error `code`.

    `str(exc)` is the message alone (`report()` adds the code)."""

    def __init__(self, message: str, code: str = MALFORMED, value: str | None = None) -> None:
        """`value`: the ONNX value the error is about, when one is (for NCC_EMOD025, the
        value that must be known at compile time)."""
        message = " ".join(str(message).split())  # always one line
        super().__init__(code, message, value)
        self.message = message

    def __str__(self) -> str:
        return self.message
