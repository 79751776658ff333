"""The flags the real neuronx-cc accepts for its own internals (`--internal-*`,
`--no-internal-*`, `--enable-internal-*`, `--disable-internal-*`, `--tensorizer-options`,
`--hbm-scratchpad-page-size`...): accepted and recorded (in the NEFF manifest, and so in the
compile cache key), changing nothing on a simulated core. Those in `RECORDED_WITH_VALUE`
take a value; any other is a switch unless given one (`--flag=value`)."""

from __future__ import annotations

import re

#: Recorded flags that take a value.
RECORDED_WITH_VALUE = frozenset({
    "--tensorizer-options", "--hbm-scratchpad-page-size", "--internal-hlo2tensorizer-options",
    "--internal-backend-options", "--internal-num-neuroncores-per-sengine",
    "--internal-enable-dge-levels", "--internal-max-instruction-limit",
    "--internal-compiler-debug-mode", "--internal-tensorizer-opt-level",
    "--internal-hlo2penguin-options", "--internal-disable-dge-levels",
})
_RECORDED = re.compile(r"^--(no-internal-|internal-|enable-internal-|disable-internal-)[\w-]+$")


def is_recorded_flag(name: str) -> bool:
    """Whether `name` (spelled `--like-this`) is a recorded flag."""
    return name in RECORDED_WITH_VALUE or bool(_RECORDED.match(name))


def takes_value(name: str) -> bool:
    """Whether the recorded flag `name` takes a value."""
    return name in RECORDED_WITH_VALUE
