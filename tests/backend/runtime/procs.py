"""Starting real processes for the runtime tests; every one is reaped, never left behind."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.paths import REPO

TIMEOUT = 30


def child_env(**env: str) -> dict[str, str]:
    """This process's environment (runtime variables included) plus `env`."""
    return {**os.environ, "PYTHONPATH": str(REPO), **env}


class Holder:
    """A running `tests.backend.runtime.holder` process and what it reported."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.done = False
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
            line = proc.stdout.readline() if ready else ""
            self.report: dict = json.loads(line)
        except BaseException:
            self.kill()
            raise AssertionError("holder gave no report") from None

    @property
    def ok(self) -> bool:
        return bool(self.report["ok"])

    def release(self) -> None:
        """Let it close its runtime and exit (stdin closed); wait for it."""
        if not self.done:
            self.done = True
            self.proc.communicate(input="", timeout=TIMEOUT)

    def kill(self) -> None:
        """SIGKILL: no cleanup of its own; the kernel drops its locks. Waits for it."""
        if not self.done:
            self.done = True
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.communicate(timeout=TIMEOUT)


@contextmanager
def holders() -> Iterator[list[Holder]]:
    """Collects holders started in the block and kills any still running at its end."""
    started: list[Holder] = []
    try:
        yield started
    finally:
        for h in started:
            h.kill()


def start_holder(started: list[Holder], neff: Path | None = None, *args: str, **env: str
                 ) -> Holder:
    """A holder loading `neff` (args: RANK WORLD GROUP to join a collective group)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.backend.runtime.holder",
                             *([str(neff)] if neff else []), *args],
                            cwd=REPO, env=child_env(**env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    h = Holder(proc)
    started.append(h)
    return h


def start_holders(started: list[Holder], envs: list[dict[str, str]]) -> list[Holder]:
    """Start several holders at once (concurrently), then read each one's report."""
    procs = [subprocess.Popen([sys.executable, "-m", "tests.backend.runtime.holder"], cwd=REPO,
                              env=child_env(**env), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for env in envs]
    result = []
    for p in procs:
        try:
            h = Holder(p)
        except BaseException:
            for q in procs:
                if q.poll() is None:
                    q.kill()
                    q.wait(timeout=TIMEOUT)
            raise
        started.append(h)
        result.append(h)
        # Refused holders exit by themselves; reap them now.
        if not h.ok:
            h.release()
    return result
