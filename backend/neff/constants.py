"""Format constants of the NEFF container: versions, sizes and feature bits, in one place."""

from __future__ import annotations

import enum

from nxcc.version import COMPILER_VERSION

HEADER_SIZE: int = 1024
"""Size in bytes of the fixed header that precedes the payload."""

PKG_VERSION: int = 1
"""Value written to the header's ``pkg_version`` field."""

NEFF_VERSION_MAJOR: int = 2
NEFF_VERSION_MINOR: int = 0
SUPPORTED_MAJOR_VERSIONS: frozenset[int] = frozenset({NEFF_VERSION_MAJOR})
"""Major versions the reader accepts; any minor version of those is accepted."""

VALID_LNC_SIZES: frozenset[int] = frozenset({1, 2})
"""Allowed logical-NeuronCore sizes (physical cores per logical core)."""

MANIFEST_NAME: str = "neff.json"
"""Payload member that holds the JSON manifest."""


class FeatureBits(enum.IntFlag):
    """Bits of the header's ``feature_bits`` field that this toolchain knows."""

    COLLECTIVES = 1 << 0
    UNCOMPRESSED_PAYLOAD = 1 << 1
    SPMD = 1 << 2


KNOWN_FEATURE_BITS: int = int(
    FeatureBits.COLLECTIVES | FeatureBits.UNCOMPRESSED_PAYLOAD | FeatureBits.SPMD
)
"""OR of all known feature bits; a header with any other bit set is refused."""


NXCC_VERSION: str = COMPILER_VERSION
DEFAULT_BUILD_VERSION: str = f"nxcc-{NXCC_VERSION}"
"""Default ``neff_build_version`` string written by :func:`write_neff`."""
