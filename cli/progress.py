"""A one-line progress display for long compiles on a terminal.

`ProgressLine` shows, once a compile has run `delay` seconds and only when stderr is a
terminal, one line that is rewritten in place: the stage running (import, a pass name,
shard, write) and the seconds since the start. Once the delay has passed, a new stage is
drawn as it starts (not at the next tick), so no stage that runs is missed. The line is
erased when the compile ends. Nothing is written when stderr is not a terminal (logs,
pipes, CI). `NXCC_PROGRESS_DELAY` sets the delay (seconds, default 2).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO


class ProgressLine:
    """Context manager; call `stage(name)` as each stage starts."""

    def __init__(self, stream: TextIO | None = None, delay: float | None = None,
                 interval: float = 0.25, force: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay if delay is not None else default_delay()
        self.interval = interval
        self.enabled = force or _isatty(self.stream)
        self.current = "start"
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def stage(self, name: str) -> None:
        self.current = name
        if self.enabled and time.monotonic() - self.start >= self.delay:
            self._draw()

    def __enter__(self) -> ProgressLine:
        self.start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="nxcc-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False

    def line(self) -> str:
        return f"neuronx-cc: {self.current} ... {time.monotonic() - self.start:.1f} s"

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(self.interval)

    def _draw(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()
            self.shown = True


def default_delay() -> float:
    """Seconds before the line appears: `NXCC_PROGRESS_DELAY`, else 2."""
    try:
        return max(0.0, float(os.environ.get("NXCC_PROGRESS_DELAY", "2")))
    except ValueError:
        return 2.0


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
