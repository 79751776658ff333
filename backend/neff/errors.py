"""The single exception type raised for every unreadable or unwritable NEFF, and its codes
(both defined in `nxcc.errors`; named here where the NEFF layer raises them).

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
- ``NRT_UNSUPPORTED_NEFF_VERSION`` a major version this tool does not read;
- ``NRT_ENEFF005`` a NEFF another compiler built (AWS's neuronx-cc): readable by
  `inspect-neff`, not runnable here (its engine programs run only on Neuron hardware).
"""

from __future__ import annotations

from nxcc.errors import (
    NEFF_CONTAINER,
    NEFF_FOREIGN,
    NEFF_REFERENCE,
    NEFF_SCHEMA,
    NEFF_SIZE,
    NEFF_VERSION,
)
from nxcc.errors import NeffError as NeffError

CONTAINER = NEFF_CONTAINER
SCHEMA = NEFF_SCHEMA
REFERENCE = NEFF_REFERENCE
SIZE = NEFF_SIZE
VERSION = NEFF_VERSION
FOREIGN = NEFF_FOREIGN
