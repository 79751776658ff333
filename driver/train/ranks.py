"""Running a job's ranks: as threads of this process, and a failure that stops them all.

`run_rank_threads(ranks, channels, work)` runs `work(rank)` for each of `ranks` on a thread
of its own and returns their results in rank order. The ranks share the BLAS's threads:
while they run, each BLAS call uses the process's count divided by the number of ranks (at
least one; `blas_threads.limit_process`, also when OPENBLAS_NUM_THREADS sets the count: the
user's threads are kept, the ranks share them). Two ranks each calling a BLAS of two
threads on two cores took 1.2-1.4 s a step of the 4-layer GPT of bench/train_gpt.py at
TP2, against 0.75 s with one thread each. The first rank that fails aborts the
channels, so every rank waiting on a transfer stops at once (their `ChannelsAborted` is a
consequence, not the cause); `RankFailed` then names the failed rank and its error in one
line. Under MPI each process runs its own ranks this way (`run.py`), and a failure ends the
whole job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from nxcc.backend.runtime.blas_threads import blas_thread_count, limit_process, limit_this_thread
from nxcc.backend.runtime.channel_comm import Channels
from nxcc.backend.runtime.channels import ChannelsAborted

T = TypeVar("T")


class RankFailed(RuntimeError):
    """A rank of the job failed; the message names it and says why, in one line."""

    def __init__(self, rank: int, error: BaseException) -> None:
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        super().__init__(f"rank {rank} failed: {text}")
        self.rank = rank
        self.error = error


def run_rank_threads(ranks: Sequence[int], channels: Channels, work: Callable[[int], T]
                     ) -> list[T]:
    """`work(rank)` for every rank, each on its own thread (see the module docstring)."""
    results: dict[int, T] = {}
    failures: list[tuple[int, BaseException]] = []
    lock = threading.Lock()

    def run(rank: int) -> None:
        try:
            value = work(rank)
        except BaseException as exc:  # noqa: BLE001 - reported once, for the whole job
            with lock:
                failures.append((rank, exc))
            channels.abort()
            return
        with lock:
            results[rank] = value

    if len(ranks) == 1:
        run(ranks[0])
    else:
        share = max(1, (blas_thread_count() or 1) // len(ranks))

        def limited(rank: int) -> None:
            with limit_this_thread(share):
                run(rank)

        with limit_process(share, even_when_set=True):
            threads = [threading.Thread(target=limited, args=(r,), name=f"nxcc-rank{r}",
                                        daemon=True) for r in ranks]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    if failures:
        causes = [f for f in failures if not isinstance(f[1], ChannelsAborted)] or failures
        rank, error = causes[0]
        raise RankFailed(rank, error) from error
    return [results[r] for r in ranks]
