"""The version shown by `neuronx-cc --version` (the one written into NEFFs)."""

from __future__ import annotations

from nxcc.backend.neff.constants import NXCC_VERSION

VERSION = NXCC_VERSION
