"""The single exception type raised for every unreadable or unwritable NEFF."""

from __future__ import annotations


class NeffError(Exception):
    """A NEFF problem, described in one line that names the file and the problem.

    ``str(err)`` is ``"<source>: <problem>"`` and never contains a newline (any
    newline in ``problem`` is folded into a space), so a CLI can print it as is.
    ``source`` is the file path (or a pseudo-name such as ``"<header>"``) and
    ``problem`` the description without the source prefix.
    """

    def __init__(self, source: str, problem: str) -> None:
        self.source: str = source
        self.problem: str = " ".join(problem.split())
        super().__init__(f"{self.source}: {self.problem}")
