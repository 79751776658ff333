"""The version shown by `neuronx-cc --version` and written into NEFFs."""

from __future__ import annotations

from importlib import metadata

try:
    VERSION = metadata.version("nxcc")
except metadata.PackageNotFoundError:  # running from a source tree
    VERSION = "0.1.0+source"
