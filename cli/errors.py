"""Turning every user-facing failure into one line on stderr and a non-zero exit.

Every error reads `ERROR: [CODE] what is wrong`. Codes: the compiler's (`NCC_E...`, from
`CompileError`); the runtime's status names for NEFF and runtime errors of `run` and
`inspect-neff` (`NRT_INVALID` for a NEFF that cannot be read or used,
`NRT_UNSUPPORTED_NEFF_VERSION`, the status of an `NrtError`), and for a NEFF whose contents
fail validation the NeffError's own code (`NRT_ENEFF002` schema, `NRT_ENEFF003` reference,
`NRT_ENEFF004` size; `backend.neff.errors`), also when the runtime refused it; a result
the compiler cannot write (a full disk) is `NCC_EIO001`. Exit statuses: 2 for a bad command
line (usage errors and `NCC_EARG001`) and for a training configuration `neuronx-cc train`
refuses (`NCC_ETRN001`, wherever in the run it is found), 3 for a NEFF another compiler built
(`NRT_ENEFF005`: `run` and `benchmark` cannot execute AWS's engine programs; `inspect-neff`
shows them), 141 without a message when stdout's reader has gone (`cli.closed_stdout`), 1
for everything else.
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
from nxcc.driver.errors import CompileError, write_error

F = TypeVar("F", bound=Callable[..., object])

DISK_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO)
"""An OSError of these is the disk's (NCC_EIO001), not the command line's."""
ARGUMENT_ERROR = 2
#: Codes of errors in what the user asked for, which exit with ARGUMENT_ERROR.
ARGUMENT_CODES = ("NCC_EARG001", "NCC_ETRN001")
FAILURE = 1
FOREIGN_NEFF = 3
INTERRUPTED = 130


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def usage_error_line(exc: click.UsageError) -> str:
    """The one line a bad command line ends in: `ERROR: [NCC_EARG001] ...`, pointing at the
    command's --help when click knows the command."""
    where = f" (see neuronx-cc {exc.ctx.info_name} --help)" if exc.ctx else ""
    if exc.ctx and exc.ctx.info_name == "neuronx-cc":
        where = " (see neuronx-cc --help)"
    return f"ERROR: [NCC_EARG001] {one_line(exc.format_message())}{where}"


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
    from nxcc.backend.neff import NeffError
    from nxcc.backend.runtime.config import ConfigError
    from nxcc.backend.runtime.status import NrtError

    if isinstance(exc, CompileError):
        status = ARGUMENT_ERROR if exc.code in ARGUMENT_CODES else FAILURE
        return str(exc), status
    from nxcc.backend.neff.errors import FOREIGN

    if isinstance(exc, NrtError):
        cause = exc.__cause__  # a NEFF the runtime refused keeps the NEFF error's code
        name = cause.code if isinstance(cause, NeffError) else f"NRT_{exc.status.name}"
        return f"[{name}] {exc.args[0]}", FOREIGN_NEFF if name == FOREIGN else FAILURE
    if isinstance(exc, NeffError):
        name = ("NRT_UNSUPPORTED_NEFF_VERSION" if "major version" in exc.problem
                else exc.code)
        return f"[{name}] {exc}", FOREIGN_NEFF if name == FOREIGN else FAILURE
    if isinstance(exc, ConfigError):
        return f"[NRT_INVALID] {exc}", FAILURE
    if family == "NCC" and isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        return str(write_error(str(exc.filename or "a file"), exc)), FAILURE
    code = "NCC_EARG001" if family == "NCC" else "NRT_INVALID"
    return f"[{code}] {exc}", ARGUMENT_ERROR if family == "NCC" else FAILURE


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
    # The backend's error types are imported here, not at the top: a compile-cache hit
    # never loads the backend (and numpy), and an error of a module not loaded cannot occur.
    from nxcc.backend.neff import NeffError
    from nxcc.backend.runtime.config import ConfigError
    from nxcc.backend.runtime.status import NrtError

    return isinstance(exc, CompileError | NeffError | NrtError | ConfigError | OSError)

