"""NEFF container format: a 1024-byte header followed by a (gzipped) tar payload.

Public API: :func:`write_neff` / :func:`read_neff` for whole files (nxcc's),
:func:`survey_neff` to look at any producer's,
:class:`NeffHeader` for the header, :func:`build_payload` / :func:`read_payload`
for the archive, :func:`dump_npy` / :func:`load_npy` for weights, and
:class:`NeffError` for every refusal.
"""

from __future__ import annotations

from nxcc.backend.neff.constants import (
    DEFAULT_BUILD_VERSION,
    FEATURE_VNC,
    HEADER_SIZE,
    MANIFEST_NAME,
    NEFF_VERSION_MAJOR,
    NEFF_VERSION_MINOR,
    PKG_VERSION,
    SUPPORTED_MAJOR_VERSIONS,
)
from nxcc.backend.neff.errors import NeffError
from nxcc.backend.neff.header import HEADER_FORMAT, NeffHeader
from nxcc.backend.neff.payload import build_payload, read_payload
from nxcc.backend.neff.reader import NeffFile, read_neff, survey_neff
from nxcc.backend.neff.survey import Survey
from nxcc.backend.neff.weights import dump_npy, load_npy
from nxcc.backend.neff.writer import write_neff

__all__ = [
    "DEFAULT_BUILD_VERSION",
    "FEATURE_VNC",
    "HEADER_FORMAT",
    "HEADER_SIZE",
    "MANIFEST_NAME",
    "NEFF_VERSION_MAJOR",
    "NEFF_VERSION_MINOR",
    "PKG_VERSION",
    "SUPPORTED_MAJOR_VERSIONS",
    "NeffError",
    "NeffFile",
    "NeffHeader",
    "Survey",
    "build_payload",
    "dump_npy",
    "load_npy",
    "read_neff",
    "read_payload",
    "survey_neff",
    "write_neff",
]
