"""libnrt status codes and the exception that carries one."""

from __future__ import annotations

import enum


class NrtStatus(enum.IntEnum):
    """Status codes of the Neuron runtime's C API (NRT_*)."""

    SUCCESS = 0
    FAILURE = 1
    INVALID = 2
    INVALID_HANDLE = 3
    RESOURCE = 4
    TIMEOUT = 5
    HW_ERROR = 6
    QUEUE_FULL = 7
    LOAD_NOT_ENOUGH_NC = 9
    UNSUPPORTED_NEFF_VERSION = 10
    UNINITIALIZED = 13
    CLOSED = 14
    EXEC_BAD_INPUT = 1002
    EXEC_NC_BUSY = 1005


class NrtError(RuntimeError):
    """A runtime failure: `status` is the libnrt code, the message says what went wrong."""

    def __init__(self, status: NrtStatus, message: str) -> None:
        super().__init__(message)
        self.status = status

    def __str__(self) -> str:
        return f"NRT_{self.status.name} ({int(self.status)}): {self.args[0]}"
