"""The single exception type raised for every unreadable or unwritable NEFF, and its codes.

Codes (printed by the CLI as ``ERROR: [CODE] ...``):

- ``NRT_INVALID`` the container: header, sizes, hash, gzip, tar, ``neff.json`` syntax (the
  runtime's status name, as for any NEFF it cannot read);
- ``NRT_ENEFF002`` the schema: a key missing, a value of the wrong type or out of range,
  an unknown dtype name, JSON nested too deeply;
- ``NRT_ENEFF003`` a reference: a function, kernel, slot, weight, program or output that a
  manifest or program names does not exist, or counts that disagree between them;
- ``NRT_ENEFF004`` a size: a tensor, arena or weight over its documented limit
  (`backend.neff.limits`), a buffer outside its arena, a weight whose bytes do not match its
  declared shape x dtype;
- ``NRT_ENEFF005`` a NEFF another compiler built (AWS's neuronx-cc): readable by
  `inspect-neff`, not runnable here (its engine programs run only on Neuron hardware).
"""

from __future__ import annotations

CONTAINER = "NRT_INVALID"
SCHEMA = "NRT_ENEFF002"
REFERENCE = "NRT_ENEFF003"
SIZE = "NRT_ENEFF004"
FOREIGN = "NRT_ENEFF005"


class NeffError(Exception):
    """A NEFF problem, described in one line that names the file and the problem.

    ``str(err)`` is ``"<source>: <problem>"`` and never contains a newline (any
    newline in ``problem`` is folded into a space), so a CLI can print it as is.
    ``source`` is the file path (or a pseudo-name such as ``"<header>"``) and
    ``problem`` the description without the source prefix; ``code`` is one of the codes
    above (``CONTAINER`` unless the raiser says otherwise).
    """

    def __init__(self, source: str, problem: str, code: str = CONTAINER) -> None:
        self.source: str = source
        self.problem: str = " ".join(problem.split())
        self.code: str = code
        super().__init__(f"{self.source}: {self.problem}")
