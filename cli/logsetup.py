"""Logging for the commands: console at the --verbose level, and the --logfile.

`--verbose` takes a level name (debug, info, warning/warn, error, critical) or a number, as
Python's logging levels: 10 debug, 20 info, 30 warning, 40 error, 50 critical; 35, as
libneuronxla passes it, shows errors and critical messages only.
"""

from __future__ import annotations

import logging

import click

VERBOSE_LEVELS = ("debug", "info", "warning", "error", "critical")
_NAMES = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "critical": 50,
          "fatal": 50}


class VerboseLevel(click.ParamType):
    """A logging level by name or number; converts to the number."""

    name = "LEVEL"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text in _NAMES:
            return _NAMES[text]
        try:
            level = int(text)
        except ValueError:
            level = -1
        if level < 0:
            self.fail(f"{value!r} is not a level: give one of {', '.join(VERBOSE_LEVELS)} or "
                      "a number (Python logging levels, e.g. 35)", param, ctx)
        return level

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[debug|info|warning|error|critical|N]"


class _LogFile(logging.FileHandler):
    """The --logfile: best effort. A record it cannot write (a full disk) closes it quietly,
    instead of logging's default of printing a traceback on stderr; the command goes on
    and fails in one line only if its own output cannot be written."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        logging.getLogger("nxcc").removeHandler(self)
        self.close()


def setup_logging(verbose: int | str, logfile: str | None) -> None:
    """Log `nxcc.*` to stderr at `verbose` and, when given, everything at debug to `logfile`."""
    level = VerboseLevel().convert(verbose, None, None)
    root = logging.getLogger("nxcc")
    for old in root.handlers:
        old.close()  # a command run again in one process must not leak the old logfile
    root.handlers.clear()
    root.setLevel(logging.DEBUG)
    root.propagate = False
    console = logging.StreamHandler()
    console.setLevel(level)
    console.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    root.addHandler(console)
    if logfile:
        try:
            handler = _LogFile(logfile, mode="w")
        except OSError as exc:
            raise OSError(f"cannot open --logfile {logfile!r}: {exc.strerror}") from None
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(handler)
