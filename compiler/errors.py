"""The compiler's user-facing error: one line with the real tool's error code."""

from __future__ import annotations


class CompileError(Exception):
    """A compilation failure caused by the user's input or flags.

    `code` follows neuronx-cc (NCC_EARG001 bad argument, NCC_EUOC002 unsupported operator,
    NCC_EMOD025 dynamic shape, NCC_EVRF064 verification, NCC_EFRM001 malformed model...).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"
