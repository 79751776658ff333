"""The compiler's user-facing error: one line with the real tool's error code."""

from __future__ import annotations


class CompileError(Exception):
    """A compilation failure caused by the user's input or flags.

    `code` follows neuronx-cc (NCC_EARG001 bad argument, NCC_EUOC002 unsupported operator,
    NCC_EMOD025 dynamic shape, NCC_EVRF064 verification, NCC_EFRM001 malformed model...).
    """

    def __init__(self, code: str, message: str, value: str | None = None) -> None:
        """`value` names the model value the error is about, when there is one (e.g. the
        value a NCC_EMOD025 error needs known at compile time)."""
        super().__init__(message)
        self.code = code
        self.value = value

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"
