"""Turning every user-facing failure into one line on stderr and a non-zero exit: the one place
where an exception becomes an `ERROR: [CODE] ...` line and an exit status.

A user-facing failure is an `nxcc.errors.Error` (its `report()` is the line, its code's
`exit_status` the status: 2 for a bad command line or configuration, 3 for a NEFF another
compiler built given to `run` or `benchmark`, 1 for everything else; docs/error-codes.md lists
them) or an OSError: a write the disk refused is `NCC_EIO001`, any
other OSError the code of the command's family (`NCC_EARG001` for the compiler's commands,
`NRT_INVALID` for the runtime's). A bad command line that click finds is `NCC_EARG001`.
A stdout whose reader has gone (`neuronx-cc ... | head`) ends the command quietly with status
141, as `cat` does (`cli.closed_stdout`). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import functools
import logging
import sys
from collections.abc import Callable
from typing import TypeVar

import click

from nxcc.cli.closed_stdout import end_quietly, is_closed_stdout
from nxcc.driver.errors import write_error
from nxcc.errors import BAD_ARGUMENT, EXIT_FAILURE, EXIT_USAGE, Error, NrtStatus, exit_status

F = TypeVar("F", bound=Callable[..., object])

DISK_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO)
"""An OSError of these is the disk's (NCC_EIO001), not the command line's."""
ARGUMENT_ERROR = EXIT_USAGE
FAILURE = EXIT_FAILURE
INTERRUPTED = 130


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def usage_error_line(exc: click.UsageError) -> str:
    """The one line a bad command line ends in: `ERROR: [NCC_EARG001] ...`, pointing at the
    command's --help when click knows the command."""
    where = f" (see neuronx-cc {exc.ctx.info_name} --help)" if exc.ctx else ""
    if exc.ctx and exc.ctx.info_name == "neuronx-cc":
        where = " (see neuronx-cc --help)"
    return f"ERROR: [{BAD_ARGUMENT}] {one_line(exc.format_message())}{where}"


def error_text(message: str) -> tuple[str, str | None]:
    """(`message` as one line, the source context or None). A source-located error (a
    message line naming FILE:LINE:COL, the source line, a caret line under it) is its first
    line; its other two lines are the context."""
    lines = str(message).splitlines()
    if len(lines) == 3 and lines[2].strip() == "^":
        return one_line(lines[0]), f"{lines[1]}\n{lines[2]}"
    return one_line(message), None


def fail(message: str, code: int = FAILURE) -> None:
    """Print `ERROR: message` to stderr as one line and exit with `code`; a located error's
    source line and caret follow in the log (on the console at --verbose info)."""
    line, context = error_text(message)
    click.echo(f"ERROR: {line}", err=True)
    if context is not None:
        logging.getLogger("nxcc.compiler").info("the error is here:\n%s", context)
    sys.exit(code)


def coded(exc: BaseException, family: str) -> tuple[str, int]:
    """(`[CODE] message`, exit status) for a user-facing error; `family` ("NCC" or "NRT")
    is the code of errors that carry none (OSError)."""
    if isinstance(exc, Error):
        return exc.report(), exc.exit_status
    if family == "NCC" and isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        return write_error(str(exc.filename or "a file"), exc).report(), FAILURE
    code = BAD_ARGUMENT if family == "NCC" else NrtStatus.INVALID.code
    return f"[{code}] {exc}", exit_status(code)


def user_errors(fn: F | None = None, *, family: str = "NCC") -> F:
    """Run a command so that a user-facing error ends in one line, never a traceback.

    With `--verbose debug` the traceback is logged too.
    """
    if fn is None:
        return functools.partial(user_errors, family=family)  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            fail("interrupted", INTERRUPTED)
        except Exception as exc:
            if is_closed_stdout(exc):  # `neuronx-cc ... | head`: no error, as with cat
                end_quietly()
            if not _user_facing(exc):
                raise
            logging.getLogger("nxcc").debug("traceback", exc_info=True)
            message, status = coded(exc, family)
            fail(message, status)
        return None

    return wrapper  # type: ignore[return-value]


def _user_facing(exc: Exception) -> bool:
    return isinstance(exc, Error | OSError)
