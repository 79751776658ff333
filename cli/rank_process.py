"""Under an MPI launcher, a rank runs in a child of the process the launcher started.

MPICH's launcher (hydra) answers the death of one of its processes by SIGKILL of all the
others, so no surviving rank could ever say which rank was lost. `split_off_rank()` forks
first thing: the child, in a session of its own, goes on to run the rank; the process the
launcher started execs into `nxcc.cli.rank_shim`, which waits for the child, forwards
SIGINT, SIGTERM and SIGHUP to it and exits with its status. When a rank's process dies, the
launcher kills the other shims; their ranks live on, find within `NEURON_RT_EXEC_TIMEOUT`
seconds that the rank is gone, each print one line naming it and exit non-zero. The
launcher waits for that output (the ranks hold its pipes open) before it ends.

A rank whose shim disappears (the launcher cleaning up, or a user's kill of the shim) runs
on: it is the rank's work that counts, and its peers decide whether the job can go on. The
exception is a rank that has not yet met its peers (`joined()` not called): MPI's start-up
exchange cannot notice a lost process, so such a rank ends when its shim does.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Callable

import click

from nxcc.cli.errors import ARGUMENT_ERROR, usage_error_line, user_errors
from nxcc.errors import NrtStatus

RANK_CHILD = "NXCC_RANK_CHILD"
_joined = threading.Event()


def split_off_rank() -> None:
    """Return in the child that runs the rank; the calling process becomes the shim and never
    returns. A no-op when this process already is such a child."""
    if os.environ.get(RANK_CHILD):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.environ[RANK_CHILD] = str(os.getpid())
        shim = os.getppid()
        threading.Thread(target=_end_with_shim_until_joined, args=(shim,), daemon=True,
                         name="nxcc-rank-watch").start()
        return
    os.execv(sys.executable, [sys.executable, "-m", "nxcc.cli.rank_shim", str(pid)])


def joined() -> None:
    """This rank has met its peers: from now on they notice a lost process themselves."""
    _joined.set()


def _end_with_shim_until_joined(shim: int) -> None:
    while not _joined.wait(0.2):
        if os.getppid() != shim:
            print(f"ERROR: [{NrtStatus.FAILURE.code}] the launcher ended the job while this rank "
                  "was starting (another process of the job was lost)", file=sys.stderr)
            leave(1)


def leave(status: int) -> None:
    """End the rank's process with `status` at once, after flushing its output. After an
    error, MPI's finalisation could wait forever for a lost peer, so a failed rank skips it."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_rank(work: Callable[[], object], family: str = "NRT") -> None:
    """Run the rank's `work`. A failure prints its one error line (codes of `family`; a bad
    command line as the command line's own), as every command's does, and ends the process
    at once (`leave`)."""
    try:
        user_errors(work, family=family)()
    except SystemExit as exc:
        leave(exc.code if isinstance(exc.code, int) else 1)
    except click.UsageError as exc:
        print(usage_error_line(exc), file=sys.stderr)
        leave(ARGUMENT_ERROR)
    except BaseException:  # a bug: its traceback, then out without MPI's finalisation
        traceback.print_exc()
        leave(1)
