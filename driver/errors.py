"""The compiler's user-facing error: one line with the real tool's error code."""

from __future__ import annotations


class CompileError(Exception):
    """A compilation failure caused by the user's input or flags.

    `code` follows neuronx-cc (NCC_EARG001 bad argument, NCC_EUOC002 unsupported operator,
    NCC_EMOD025 dynamic shape, NCC_EVRF064 verification, NCC_EFRM001 malformed model...),
    and NCC_EIO001 for a result that could not be written (a full disk, a read-only one).
    """

    def __init__(self, code: str, message: str, value: str | None = None) -> None:
        """`value` names the model value the error is about, when there is one (e.g. the
        value a NCC_EMOD025 error needs known at compile time)."""
        super().__init__(message)
        self.code = code
        self.value = value

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"


WRITE_FAILED = "NCC_EIO001"
"""The code of a result the compiler could not write (nxcc's own: the real tool has none)."""


def write_error(path: str, exc: OSError | str, what: str = "") -> CompileError:
    """NCC_EIO001 `cannot write PATH: No space left on device` for a failed write of `path`
    (`exc`, or the reason as text; `what` names the file when its path would not say)."""
    reason = exc if isinstance(exc, str) else exc.strerror or str(exc) or type(exc).__name__
    return CompileError(WRITE_FAILED, f"cannot write {what or repr(path)}: {reason}")
