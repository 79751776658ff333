"""Threads that run the cores of a multi-core execution, kept between executions.

Starting a thread and waiting for it to run costs about 120 us on a busy 2-core machine,
on the critical path of every `-lnc 2` execution (core 1 starts that much after core 0,
which then waits for it at the first collective). A waiting thread woken by releasing a
lock starts far sooner, so `run_on_threads` takes idle workers from a process-wide pool,
hands each its task and runs task 0 on the calling thread.

A worker is a daemon thread blocked on its own `go` lock; the caller releases `go` and later
acquires the worker's `done` lock, which the worker releases when its task returned (a task
must catch its own exceptions: `run_cores` does). A worker left idle for `IDLE_SECONDS`
ends its thread, so a process does not keep threads it no longer uses; the next task starts
a fresh one (a lock decides between "exit" and "a task arrived just now"). A forked child
starts with an empty pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

#: How long an idle worker's thread waits for a task before it ends.
IDLE_SECONDS = 2.0


class _Worker:
    """One reusable thread: `start(task, name)`, then `wait()` for it to finish."""

    def __init__(self) -> None:
        self._go = threading.Lock()
        self._go.acquire()
        self._done = threading.Lock()
        self._done.acquire()
        self._state = threading.Lock()
        self._task: Callable[[], None] | None = None
        self._name = ""
        self._running = False  # a thread is serving this worker

    def start(self, task: Callable[[], None], name: str) -> None:
        with self._state:
            self._task, self._name = task, name
            if not self._running:
                self._running = True
                threading.Thread(target=self._serve, name=name, daemon=True).start()
            self._go.release()

    def wait(self) -> None:
        self._done.acquire()

    def _serve(self) -> None:
        while True:
            if not self._go.acquire(timeout=IDLE_SECONDS):
                with self._state:
                    if not self._go.acquire(blocking=False):
                        self._running = False
                        return
            task, self._task = self._task, None
            threading.current_thread().name = self._name
            try:
                task()  # type: ignore[misc]
            finally:
                self._done.release()


_pool_lock = threading.Lock()
_idle: list[_Worker] = []


def _forget_workers() -> None:
    """In a forked child: the parent's worker threads do not exist here (a worker whose
    thread is gone would never run its task), and the lock may have been held."""
    global _pool_lock, _idle
    _pool_lock = threading.Lock()
    _idle = []


os.register_at_fork(after_in_child=_forget_workers)


def run_on_threads(tasks: Sequence[Callable[[], None]], names: Sequence[str]) -> None:
    """Run tasks[1:] on pooled threads named `names[1:]` and tasks[0] on the calling
    thread; return once all have returned. Tasks must not raise."""
    with _pool_lock:
        workers = [_idle.pop() if _idle else _Worker() for _ in tasks[1:]]
    started: list[_Worker] = []
    try:
        for worker, task, name in zip(workers, tasks[1:], names[1:], strict=True):
            worker.start(task, name)
            started.append(worker)
        tasks[0]()
    finally:
        for worker in started:
            worker.wait()
        with _pool_lock:
            _idle.extend(started)
