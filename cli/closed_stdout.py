"""A closed stdout (`neuronx-cc list-operators | head`) ends a command quietly.

When the reader of a pipe goes away, the next write to it fails with EPIPE (Python ignores
the SIGPIPE that would end a C program). The command then ends as the tools around it do
when SIGPIPE ends them: no message, exit status 141 (128 + SIGPIPE), which a shell's
`set -o pipefail` reports as it does for `cat` or `grep`. It ends by an exception, so
temporary files are removed and NeuronCores released as after Ctrl-C. A broken pipe that is
not stdout's stays an error.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import NoReturn

#: The exit status of a command whose stdout was closed: the shell's status for SIGPIPE.
CLOSED_STDOUT = 128 + signal.SIGPIPE


def stdout_closed() -> bool:
    """Whether stdout is a pipe or socket whose reader has gone (polled, not written)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):  # no stdout, or not a real file
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


def is_closed_stdout(exc: BaseException) -> bool:
    """Whether `exc` is a write to a stdout whose reader has gone."""
    return isinstance(exc, BrokenPipeError) and stdout_closed()


def end_quietly() -> NoReturn:
    """Exit with CLOSED_STDOUT, stdout pointed at /dev/null first so that the interpreter's
    last flush of what is still buffered does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    finally:
        os.close(devnull)
    sys.exit(CLOSED_STDOUT)
