"""The documented limits a NEFF must keep before anything it declares is allocated.

Every size a manifest or program declares (a tensor's shape x its dtype's size, an arena,
a weight) is checked against these limits, and against the payload, before the runtime
allocates it. They are far above what any model this toolchain compiles needs, and low
enough that a hostile NEFF cannot make one process take more than a few GiB.
"""

from __future__ import annotations

from nxcc.ir.limits import MAX_DIM as IR_MAX_DIM
from nxcc.ir.limits import MAX_RANK as IR_MAX_RANK
from nxcc.ir.limits import MAX_TENSOR_BYTES as IR_MAX_TENSOR_BYTES

MAX_PAYLOAD_BYTES: int = 2 << 30
"""The tar payload after gunzip (a gzip bomb stops here)."""

MAX_TENSOR_BYTES: int = IR_MAX_TENSOR_BYTES
"""One tensor (input, output, slot, weight, collective operand): shape x dtype size (the
IR's limit, `ir.limits`, which the frontends apply too)."""

MAX_ARENA_BYTES: int = 1 << 30
"""The arenas (planned buffers) of all functions of all programs of one NEFF, together."""

MAX_RANK: int = IR_MAX_RANK
"""Dimensions of one tensor."""

MAX_DIM: int = IR_MAX_DIM
"""One dimension (before the product is bounded by MAX_TENSOR_BYTES)."""

MAX_JSON_DEPTH: int = 32
"""Nesting of `neff.json` and `sgNN/program.json` (deeper is refused before parsing)."""

MAX_PROGRAMS: int = 64
"""Per-core programs (subgraphs) in one NEFF."""

MAX_ITEMS: int = 1 << 22
"""Entries of one list or object in a manifest or program (slots, instructions, ...)."""
