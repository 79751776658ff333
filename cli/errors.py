"""Turning every user-facing failure into one line on stderr and a non-zero exit."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import TypeVar

import click

from nxcc.backend.neff import NeffError
from nxcc.backend.runtime.config import ConfigError
from nxcc.backend.runtime.status import NrtError
from nxcc.driver.errors import CompileError

F = TypeVar("F", bound=Callable[..., object])

USER_ERRORS = (CompileError, NeffError, NrtError, ConfigError, OSError)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_text(message: str) -> str:
    """`message` folded to one line; except a source-located error (a message line, the
    source line, a caret line under it), which keeps its three lines."""
    lines = str(message).splitlines()
    if len(lines) == 3 and lines[2].strip() == "^":
        return "\n".join([one_line(lines[0]), lines[1], lines[2]])
    return one_line(message)


def with_code(exc: BaseException) -> str:
    """`str(exc)`, led by `[CODE]` when the error (or the NEFF error it wraps) carries a
    code its text does not already show."""
    text = str(exc)
    code = getattr(exc, "code", None) or getattr(exc.__cause__, "code", None)
    if isinstance(code, str) and f"[{code}]" not in text:
        return f"[{code}] {text}"
    return text


def fail(message: str, code: int = 1) -> None:
    """Print `ERROR: message` to stderr (one line, or a located error with its caret) and
    exit with `code`."""
    click.echo(f"ERROR: {error_text(message)}", err=True)
    sys.exit(code)


def user_errors(fn: F) -> F:
    """Run a command so that a user-facing error ends in one line, never a traceback.

    With `--verbose debug` the traceback is logged too.
    """

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            logging.getLogger("nxcc").debug("traceback", exc_info=True)
            fail(with_code(exc))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        return None

    return wrapper  # type: ignore[return-value]
