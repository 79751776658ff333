"""libnrt status codes and the exception that carries one (defined in `nxcc.errors`, the one
home of nxcc's error codes; named here where the runtime raises them)."""

from __future__ import annotations

from nxcc.errors import NrtError, NrtStatus

__all__ = ["NrtError", "NrtStatus"]
