"""A reusable barrier for the ranks of a communicator that fails instead of hanging."""

from __future__ import annotations

import threading


class Barrier:
    """A reusable barrier for `n` ranks that fails instead of hanging.

    A rank released by a completed generation always returns normally; `abort()` (a rank
    failed) and `finish()` (a rank completed its program) make every present and future
    waiter of an incomplete generation raise, since that generation can never complete.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.cond = threading.Condition()
        self.count = 0
        self.generation = 0
        self.broken = False
        self.finished = 0

    def reset(self) -> None:
        with self.cond:
            self.count = 0
            self.generation += 1
            self.broken = False
            self.finished = 0

    def wait(self) -> bool:
        """True once all n ranks arrived; False if the barrier can no longer complete."""
        with self.cond:
            if self.broken or self.finished:
                return False
            generation = self.generation
            self.count += 1
            if self.count == self.n:
                self.count = 0
                self.generation += 1
                self.cond.notify_all()
                return True
            while generation == self.generation and not (self.broken or self.finished):
                self.cond.wait()
            if generation != self.generation:
                return True
            self.count -= 1
            return False

    def abort(self) -> None:
        with self.cond:
            self.broken = True
            self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.finished += 1
            self.cond.notify_all()
