"""Format constants of the NEFF container: versions, sizes and feature bits, in one place."""

from __future__ import annotations

from nxcc.version import COMPILER_VERSION

HEADER_SIZE: int = 1024
"""Size in bytes of the fixed header that precedes the payload."""

PKG_VERSION: int = 2
"""Value written to the header's ``pkg_version`` field (the real tool writes 2)."""

NEFF_VERSION_MAJOR: int = 2
NEFF_VERSION_MINOR: int = 0
SUPPORTED_MAJOR_VERSIONS: frozenset[int] = frozenset({1, NEFF_VERSION_MAJOR})
"""Major versions the reader accepts; any minor version of those is accepted. The real
compiler's trn1 NEFFs of 2.4 and 2.18 carry major 1, its trn2 NEFFs of 2.21 and 2.23 major 2."""

VALID_LNC_SIZES: frozenset[int] = frozenset({1, 2})
"""Logical-NeuronCore sizes (physical cores per logical core) nxcc writes and runs."""

MAX_LNC_SIZE: int = 64
"""The largest ``lnc_size`` the reader accepts in any NEFF (0 means "not recorded": NEFFs
from before logical cores existed)."""

MANIFEST_NAME: str = "neff.json"
"""Payload member that holds the JSON manifest (nxcc's, or the real tool's TVM graph)."""

FEATURE_VNC: int = 0x400
"""Bit of the real tool's feature word (offset 544) set when a logical core spans several
physical cores (its `def.json` then lists `neff_feature_vnc`); nxcc sets it at LNC 2."""

NXCC_VERSION: str = COMPILER_VERSION
DEFAULT_BUILD_VERSION: str = f"nxcc-{NXCC_VERSION}"
"""Default ``neff_build_version`` string written by :func:`write_neff` (the real tool leaves
the field zero; nxcc's NEFFs are told by it and by their manifest)."""
BUILD_VERSION_PREFIX: str = "nxcc-"
