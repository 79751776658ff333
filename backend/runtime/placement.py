"""Where models go on the cores a process owns, as the placement seed describes.

The explicit placement API (this module is the counterpart of
`torch_neuronx.experimental`):

    from nxcc.backend.runtime.placement import neuron_cores_context, multicore_context

    with neuron_cores_context(start_nc=3):
        m0 = rt.load("model.neff")                  # on nc3
    with neuron_cores_context(start_nc=0, nc_count=2):
        m1 = rt.load("model.neff")                  # replicas on nc0 and nc1
    with multicore_context():
        m2 = rt.load("model.neff")                  # replicas on every core of the process

Both context managers are thread-local and nest (the innermost wins). Core indices given
here, and to `Runtime.load(start_nc=, nc_count=)`, are relative to the cores this process
owns (index 0 is its first core); reported cores are the instance's global indices.

Without a request, a model loads to the least used cores, in linear order on ties, so with
nothing else loaded m0 -> nc0, m1 -> nc1, and so on, wrapping around when every core has a
model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from nxcc.backend.runtime.status import NrtError, NrtStatus

AUTO = -1


@dataclass(frozen=True)
class PlacementRequest:
    """What the caller asked for: -1 means automatic; `multicore` means every core."""

    start_nc: int = AUTO
    nc_count: int = AUTO
    multicore: bool = False


_local = threading.local()


def current_request() -> PlacementRequest:
    """The request set by the innermost active context manager of this thread."""
    stack: list[PlacementRequest] = getattr(_local, "stack", [])
    return stack[-1] if stack else PlacementRequest()


@contextmanager
def _pushed(request: PlacementRequest) -> Iterator[None]:
    stack: list[PlacementRequest] = getattr(_local, "stack", None) or []
    _local.stack = stack
    stack.append(request)
    try:
        yield
    finally:
        stack.pop()


@contextmanager
def neuron_cores_context(start_nc: int = AUTO, nc_count: int = AUTO) -> Iterator[None]:
    """Models loaded in this block (by this thread) go to `start_nc`, over `nc_count` cores
    (-1: the least used cores / as many as one copy needs)."""
    if start_nc < AUTO or nc_count < AUTO or nc_count == 0:
        raise ValueError(f"start_nc={start_nc}, nc_count={nc_count}: use -1 or an index "
                         "(start_nc >= 0, nc_count >= 1)")
    with _pushed(PlacementRequest(start_nc, nc_count)):
        yield


@contextmanager
def multicore_context() -> Iterator[None]:
    """Models loaded in this block are replicated on every core the process owns."""
    with _pushed(PlacementRequest(multicore=True)):
        yield


class Placer:
    """Tracks how many models use each core of the process and chooses where loads go."""

    def __init__(self, cores: Sequence[int], describe: str = "") -> None:
        self.cores = list(cores)
        self.usage = [0] * len(self.cores)
        self.describe = describe or f"{len(self.cores)} NeuronCores"
        self._lock = threading.Lock()

    def place(self, needed: int, request: PlacementRequest) -> list[int]:
        """The first relative core of each replica (each spans `needed` cores); counts them.

        NrtError INVALID for an nc_count that is not a multiple of `needed`,
        LOAD_NOT_ENOUGH_NC when the cores asked for are not the process's.
        """
        n = len(self.cores)
        start, count = request.start_nc, request.nc_count
        if start < AUTO or count < AUTO or count == 0:
            raise NrtError(NrtStatus.INVALID, f"start_nc={start}, nc_count={count}: use -1 "
                           "(automatic) or start_nc >= 0, nc_count >= 1")
        if request.multicore:
            start, count = 0, (n // needed) * needed
            if count == 0:
                raise self._short(needed, 0, needed)
        if count == AUTO:
            count = needed
        if count % needed:
            raise NrtError(NrtStatus.INVALID,
                           f"nc_count={count} is not a multiple of the {needed} NeuronCore(s) "
                           "the model needs (a multiple replicates it)")
        with self._lock:
            if start == AUTO:
                start = self._least_used(count)
            if start < 0 or start + count > n:
                raise self._short(count, start, needed)
            starts = list(range(start, start + count, needed))
            for s in starts:
                for i in range(s, s + needed):
                    self.usage[i] += 1
        return starts

    def release(self, starts: Sequence[int], needed: int) -> None:
        with self._lock:
            for s in starts:
                for i in range(s, s + needed):
                    self.usage[i] -= 1

    def _least_used(self, count: int) -> int:
        windows = range(0, len(self.cores) - count + 1)
        if not windows:
            raise self._short(count, 0, count)
        return min(windows, key=lambda s: (max(self.usage[s:s + count]),
                                           sum(self.usage[s:s + count]), s))

    def _short(self, count: int, start: int, needed: int) -> NrtError:
        where = "" if start in (AUTO, 0) else f" from start_nc={start}"
        return NrtError(NrtStatus.LOAD_NOT_ENOUGH_NC,
                        f"the model needs {count} NeuronCore(s){where} but this process owns "
                        f"{self.describe}; start_nc and nc_count are relative to the "
                        "process's cores (NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES)")
