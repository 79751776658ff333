"""Logging for the commands: console at the --verbose level, and the --logfile.

`--verbose` takes a level name (debug, info, warning/warn, error, critical) or a number, as
Python's logging levels: 10 debug, 20 info, 30 warning, 40 error, 50 critical; 35, as
libneuronxla passes it, shows errors and critical messages only.
"""

from __future__ import annotations

import click

from nxcc.cli.log_handlers import configure_logging

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


def setup_logging(verbose: int | str, logfile: str | None) -> None:
    """Log `nxcc.*` to stderr at `verbose` and, when given, everything at debug to `logfile`."""
    configure_logging(VerboseLevel().convert(verbose, None, None), logfile)
