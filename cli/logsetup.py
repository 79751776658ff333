"""Logging for the commands: console at the --verbose level, and the --logfile."""

from __future__ import annotations

import logging

VERBOSE_LEVELS = ("debug", "info", "warning", "error", "critical")


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
            handler = logging.FileHandler(logfile, mode="w")
        except OSError as exc:
            raise OSError(f"cannot open --logfile {logfile!r}: {exc.strerror}") from None
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(handler)
