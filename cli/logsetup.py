"""Logging for the commands: console at the --verbose level, and the --logfile."""

from __future__ import annotations

import logging

VERBOSE_LEVELS = ("debug", "info", "warning", "error", "critical")


class _LogFile(logging.FileHandler):
    """The --logfile: best effort. A record it cannot write (a full disk) closes it quietly,
    instead of logging's default of printing a traceback on stderr; the command goes on
    and fails in one line only if its own output cannot be written."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        logging.getLogger("nxcc").removeHandler(self)
        self.close()


def setup_logging(verbose: str, logfile: str | None) -> None:
    """Log `nxcc.*` to stderr at `verbose` and, when given, everything at debug to `logfile`."""
    root = logging.getLogger("nxcc")
    for old in root.handlers:
        old.close()  # a command run again in one process must not leak the old logfile
    root.handlers.clear()
    root.setLevel(logging.DEBUG)
    root.propagate = False
    console = logging.StreamHandler()
    console.setLevel(getattr(logging, verbose.upper()))
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
