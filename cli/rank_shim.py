"""`python -m nxcc.cli.rank_shim PID`: what the launcher's process becomes once its rank runs
in the child PID (see `cli.rank_process`): forward SIGINT, SIGTERM and SIGHUP to the child,
wait for it, and exit with its status (128 + N when signal N ended it)."""

from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    """Wait for the rank's process `argv[0]`; its exit status."""
    child = int(argv[0])

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            return 1
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
