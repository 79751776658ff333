"""Chrome/Perfetto traces of what each rank did: `neuronx-cc run --profile trace.json` and
`neuronx-cc train --profile trace.json`.

A `Profiler` collects complete events ("ph": "X", microseconds) from the executors, the
communication threads and whoever else records: one trace process per rank (for an
`-lnc 2` model run by `run`, per physical core), each with its tracks (trace threads): the
compute ops on track 0 and the collectives and transfers on track 1 by default, more
tracks where the recorder names them (`track_names`). So the overlap of a collective's
start (`all_gather_start`...) with the compute that follows it can be seen. Events on one
track nest by time (a span and the spans inside it). `attach` turns it on for a loaded
model; `write` saves the trace (JSON trace events, which Perfetto and Chrome's tracing view
open) atomically. Profiling costs two clock reads per op; without a profiler the executor's
loop is unchanged.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from nxcc.backend.neff.atomic import write_chunks

COMPUTE, COMMUNICATION = 0, 1
DEFAULT_TRACKS = {COMPUTE: "compute", COMMUNICATION: "communication"}


class Profiler:
    """Thread-safe collector of trace events; times are microseconds since `origin` (a
    `time.perf_counter()` value: by default the profiler's creation; processes of one host
    that share an origin share a time line). `track_names` names each track (trace
    thread), `rank_names` each rank's trace process (default `rank N`)."""

    def __init__(self, origin: float | None = None,
                 track_names: Mapping[int, str] | None = None) -> None:
        self.origin = time.perf_counter() if origin is None else origin
        self.events: list[dict[str, Any]] = []
        self.ranks: set[int] = set()
        self.track_names = dict(DEFAULT_TRACKS if track_names is None else track_names)
        self.rank_names: dict[int, str] = {}
        self._lock = threading.Lock()

    def record(self, name: str, rank: int, track: int, start: float, end: float,
               args: Mapping[str, object] | None = None) -> None:
        """One op or span of `rank` on `track` that ran from `start` to `end`
        (perf_counter), with `args` shown beside it."""
        ts = round((start - self.origin) * 1e6, 3)  # an event that starts where another
        stop = round((end - self.origin) * 1e6, 3)  # ends shares its nanosecond exactly
        event: dict[str, Any] = {
            "name": name, "ph": "X", "pid": rank, "tid": track, "ts": ts,
            "dur": round(stop - ts, 3),
            "cat": "compute" if track == COMPUTE else self.track_names.get(track, "other")}
        if args:
            event["args"] = dict(args)
        with self._lock:
            self.events.append(event)
            self.ranks.add(rank)

    @contextmanager
    def span(self, name: str, rank: int, track: int = COMPUTE,
             args: Mapping[str, object] | None = None) -> Iterator[None]:
        """Record the `with` block as one event."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, rank, track, start, time.perf_counter(), args)

    def merge(self, events: Iterable[dict[str, Any]], rank_names: Mapping[int, str]) -> None:
        """Add events recorded by another profiler with the same origin (another process
        of the job)."""
        events = list(events)
        with self._lock:
            self.events.extend(events)
            self.ranks.update(int(e["pid"]) for e in events)
            self.rank_names.update(rank_names)

    def trace(self) -> dict[str, Any]:
        """The trace: metadata naming each rank and track, then the events in time order."""
        with self._lock:
            events = sorted(self.events, key=lambda e: (e["ts"], -e["dur"]))
            used = {(e["pid"], e["tid"]) for e in events}
        meta: list[dict[str, Any]] = []
        for rank in sorted(self.ranks):
            meta.append({"name": "process_name", "ph": "M", "pid": rank,
                         "args": {"name": self.rank_names.get(rank, f"rank {rank}")}})
            meta.append({"name": "process_sort_index", "ph": "M", "pid": rank,
                         "args": {"sort_index": rank}})
            for tid, label in self.track_names.items():
                if tid in DEFAULT_TRACKS or (rank, tid) in used:
                    meta.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": tid,
                                 "args": {"name": label}})
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
