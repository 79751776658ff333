"""The commands' log handlers, without click: the console at a level and the --logfile.

Kept apart from `cli.logsetup` (which parses `--verbose` with click) so that a replayed
compile-cache hit (`cli.replay`) logs exactly as a full run does without importing click.
"""

from __future__ import annotations

import logging


class _LogFile(logging.FileHandler):
    """The --logfile: best effort. A record it cannot write (a full disk) closes it quietly,
    instead of logging's default of printing a traceback on stderr; the command goes on
    and fails in one line only if its own output cannot be written."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        logging.getLogger("nxcc").removeHandler(self)
        self.close()


def configure_logging(level: int, logfile: str | None) -> None:
    """Log `nxcc.*` to stderr at `level` and, when given, everything at debug to `logfile`
    (OSError naming the file if it cannot be opened)."""
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
