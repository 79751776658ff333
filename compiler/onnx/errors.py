"""The frontend's one exception type and the NCC error codes it carries.

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

MALFORMED = "NCC_EFRM001"
INVALID_NODE = "NCC_EFRM002"
UNSUPPORTED_OP = "NCC_EUOC002"
UNSUPPORTED_FEATURE = "NCC_EUOC003"
UNSUPPORTED_DTYPE = "NCC_EDTY001"
DYNAMIC = "NCC_EMOD025"
BAD_ARGUMENT = "NCC_EARG001"


class FrontendError(Exception):
    """A model the frontend cannot compile: a one-line message and an NCC error `code`."""

    def __init__(self, message: str, code: str = MALFORMED, value: str | None = None) -> None:
        """`value`: the ONNX value the error is about, when one is (for NCC_EMOD025, the
        value that must be known at compile time)."""
        message = " ".join(str(message).split())  # always one line
        super().__init__(message)
        self.message = message
        self.code = code
        self.value = value

    def __str__(self) -> str:
        return self.message
