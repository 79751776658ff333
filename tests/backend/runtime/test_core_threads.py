"""The pooled threads that run cores 1..n-1 of a multi-core execution."""

from __future__ import annotations

import threading
import time

from nxcc.backend.runtime import core_threads
from nxcc.backend.runtime.core_threads import run_on_threads


def _record(into: list, k: int):
    return lambda: into.append((k, threading.current_thread().name, threading.get_ident()))


def test_tasks_run_on_named_threads_and_task_0_on_the_caller() -> None:
    seen: list = []
    run_on_threads([_record(seen, k) for k in range(3)], ["a", "b", "c"])
    by_task = {k: (name, ident) for k, name, ident in seen}
    assert sorted(by_task) == [0, 1, 2]
    assert by_task[0][1] == threading.get_ident()
    assert by_task[1][0] == "b" and by_task[2][0] == "c"
    assert len({ident for _, ident in by_task.values()}) == 3


def test_threads_are_reused_between_runs() -> None:
    first: list = []
    second: list = []
    run_on_threads([_record(first, k) for k in range(2)], ["x0", "x1"])
    run_on_threads([_record(second, k) for k in range(2)], ["x0", "x1"])
    ident = {k: i for k, _, i in first}[1]
    assert {k: i for k, _, i in second}[1] == ident


def test_run_returns_only_after_every_task_returned() -> None:
    done: list = []

    def slow() -> None:
        time.sleep(0.05)
        done.append("slow")

    run_on_threads([lambda: None, slow], ["a", "b"])
    assert done == ["slow"]


def test_an_idle_worker_ends_its_thread_and_a_new_one_serves_later(monkeypatch) -> None:
    monkeypatch.setattr(core_threads, "IDLE_SECONDS", 0.05)
    seen: list = []
    run_on_threads([lambda: None, _record(seen, 1)], ["a", "idle-test"])
    thread = next(t for t in threading.enumerate() if t.ident == seen[0][2])
    thread.join(timeout=5)
    assert not thread.is_alive()
    run_on_threads([lambda: None, _record(seen, 1)], ["a", "idle-test"])
    assert len(seen) == 2 and seen[1][1] == "idle-test"


def test_a_forked_child_gets_fresh_workers() -> None:
    """The parent's pooled threads do not exist in a forked child: its runs must not wait
    for them."""
    import multiprocessing

    run_on_threads([lambda: None, lambda: None], ["a", "b"])  # the parent now has a worker

    def child() -> None:
        seen: list = []
        run_on_threads([lambda: None, _record(seen, 1)], ["a", "b"])
        raise SystemExit(0 if seen else 3)

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(timeout=30)
    alive = process.is_alive()
    if alive:
        process.kill()
    assert not alive and process.exitcode == 0
