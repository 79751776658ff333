"""`neuronx-cc run --profile trace.json`: a Chrome/Perfetto trace of what each rank did.

A `Profiler` collects complete events ("ph": "X", microseconds) from the executors and the
communication threads: one trace process per rank (for an `-lnc 2` model, per physical
core), with its compute ops on track 0 and its collectives and transfers on track 1, so the
overlap of a collective's start (`all_gather_start`...) with the compute that follows it
can be seen. `attach` turns it on for a loaded model; `write` saves the trace (JSON trace
events) atomically.
Profiling costs two clock reads per op; without a profiler the executor's loop is unchanged.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from nxcc.backend.neff.atomic import write_chunks

COMPUTE, COMMUNICATION = 0, 1


class Profiler:
    """Thread-safe collector of trace events; times are microseconds since its creation."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self.events: list[dict[str, Any]] = []
        self.ranks: set[int] = set()
        self._lock = threading.Lock()

    def record(self, name: str, rank: int, track: int, start: float, end: float) -> None:
        """One op of `rank` on `track` that ran from `start` to `end` (perf_counter)."""
        event = {"name": name, "ph": "X", "pid": rank, "tid": track,
                 "ts": round((start - self.origin) * 1e6, 3),
                 "dur": round((end - start) * 1e6, 3),
                 "cat": "communication" if track == COMMUNICATION else "compute"}
        with self._lock:
            self.events.append(event)
            self.ranks.add(rank)

    def trace(self) -> dict[str, Any]:
        """The trace: metadata naming each rank and track, then the events in time order."""
        meta: list[dict[str, Any]] = []
        for rank in sorted(self.ranks):
            meta.append({"name": "process_name", "ph": "M", "pid": rank,
                         "args": {"name": f"rank {rank}"}})
            for tid, label in ((COMPUTE, "compute"), (COMMUNICATION, "communication")):
                meta.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": tid,
                             "args": {"name": label}})
        with self._lock:
            events = sorted(self.events, key=lambda e: e["ts"])
        return {"traceEvents": meta + events, "displayTimeUnit": "ms"}

    def write(self, path: str) -> None:
        write_chunks(path, [json.dumps(self.trace()).encode()])


def attach(model: Any, profiler: Profiler) -> None:
    """Profile every executor of loaded model `model` (a `LoadedModel` or `SpmdModel`) and
    its communication threads; rank numbers are the executors' ranks."""
    ranks = getattr(model, "local_ranks", None) or range(len(model.executors))
    for rank, executor in zip(ranks, model.executors, strict=True):
        executor.profiler, executor.rank = profiler, rank
        endpoint = executor.communicator
        if endpoint is not None and hasattr(endpoint, "profiler"):
            endpoint.profiler = profiler
