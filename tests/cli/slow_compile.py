"""`python -m tests.cli.slow_compile SECONDS ARGS...`: `neuronx-cc ARGS...` with every pass
and the NEFF write slowed down, so fault tests can kill a compile in any phase.

Every pass a pass manager runs is wrapped in `Slowed`, a test-only pass that runs it and then
sleeps SECONDS; the NEFF's payload is written after a pause of SECONDS once its header is
(`writer._write_hashing`), and files written with `atomic.write_chunks` pause after their
first chunk. Both are installed here, in the test's own process, before the command line
starts; the compiler has no hook for them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from nxcc.backend.neff import atomic, writer
from nxcc.ir.core import Module
from nxcc.passes.base import Pass
from nxcc.passes.manager import PassManager


@dataclass(frozen=True)
class Slowed:
    """`inner`, then a sleep of `seconds`; named as `inner` (so printing and timings are as
    without it)."""

    inner: Pass
    seconds: float

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def run(self, module: Module) -> bool:
        changed = self.inner.run(module)
        time.sleep(self.seconds)
        return changed


def slow_down(seconds: float) -> None:
    """Install the pauses in this process."""
    run = PassManager.run

    def slowed_run(manager: PassManager, module: Module) -> Module:
        manager.passes = [Slowed(p, seconds) for p in manager.passes]  # type: ignore[misc]
        return run(manager, module)

    write_chunks = atomic.write_chunks

    def paused(chunks: Iterable[bytes | memoryview]) -> Iterator[bytes | memoryview]:
        for i, chunk in enumerate(chunks):
            if i == 1:
                time.sleep(seconds)
            yield chunk

    def slowed_write(target: str, chunks: Iterable[bytes | memoryview]) -> None:
        write_chunks(target, paused(chunks))

    write_hashing = writer._write_hashing

    def slowed_payload(out: BinaryIO, chunks: list[bytes | memoryview]) -> bytes:
        time.sleep(seconds)  # the NEFF's header is written, its payload not yet
        return write_hashing(out, chunks)

    PassManager.run = slowed_run  # type: ignore[method-assign]
    atomic.write_chunks = slowed_write
    writer._write_hashing = slowed_payload


if __name__ == "__main__":
    slow_down(float(sys.argv[1]))
    from nxcc.cli.entry import main

    main(sys.argv[2:])
