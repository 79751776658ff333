"""The compiler's user-facing error (`nxcc.errors.CompileError`, named here where the driver
raises it) and the error of a result that could not be written."""

from __future__ import annotations

from nxcc.errors import WRITE_FAILED, CompileError

__all__ = ["WRITE_FAILED", "CompileError", "write_error"]


def write_error(path: str, exc: OSError | str, what: str = "") -> CompileError:
    """NCC_EIO001 `cannot write PATH: No space left on device` for a failed write of `path`
    (`exc`, or the reason as text; `what` names the file when its path would not say)."""
    reason = exc if isinstance(exc, str) else exc.strerror or str(exc) or type(exc).__name__
    return CompileError(WRITE_FAILED, f"cannot write {what or repr(path)}: {reason}")
