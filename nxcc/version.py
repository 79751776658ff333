"""nxcc's version: the one place it is written (pyproject.toml reads it from here).

`COMPILER_VERSION` is the form the real tool prints (`X.Y.Z...+<build>`): `neuronx-cc
--version` shows it, NEFFs record it and the compile cache is laid out by it.
"""

from __future__ import annotations

__version__ = "0.3.0"

COMPILER_VERSION = f"{__version__}+nxcc"
