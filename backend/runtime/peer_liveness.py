"""Whether the other processes of an MPI job are still alive, for those on this host.

A rank waiting for a peer cannot tell a slow peer from a dead one by waiting alone, and a
rank that waits on a rank that itself waits on the dead one would blame the wrong rank. The
processes of a job therefore exchange (host, pid) at load; a waiting receive asks
`first_dead()` now and then, and a process of this host that no longer exists is named at
once as the lost one. Processes on other hosts are not visible: for them the receive's
deadline (`NEURON_RT_EXEC_TIMEOUT`) decides.

A process that gives up because a peer was lost leaves a note first (`leaving`), in a
directory of the job under the runtime directory, so that a peer that finds it gone repeats
the original cause instead of naming a process that only followed it out.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Sequence

#: Seconds between two looks at the peers' processes.
LOOK_EVERY = 0.2


def this_process() -> tuple[str, int]:
    """(host name, pid) of this process, as exchanged at load."""
    return socket.gethostname(), os.getpid()


class PeerProcesses:
    """The job's processes as (host, pid), indexed by process number."""

    def __init__(self, processes: Sequence[tuple[str, int]], me: int,
                 ranks_per_process: int = 1, note_dir: str | None = None) -> None:
        """`note_dir`: where this job's processes leave their notes (None: no notes)."""
        host = processes[me][0]
        self.me = me
        self.ranks_per_process = ranks_per_process
        job = hashlib.sha256(repr(list(processes)).encode()).hexdigest()[:16]
        self.notes = None if note_dir is None else os.path.join(note_dir, f"lost-{job}")
        self.local = [(p, pid) for p, (h, pid) in enumerate(processes) if h == host and p != me]
        self.pids = [pid for _, pid in processes]
        self._next_look = 0.0
        self._dead: str | None = None

    def lost_message(self, now: bool = False) -> str | None:
        """Why a peer is lost, or None while every process of this host lives (looks at most
        every `LOOK_EVERY` seconds unless `now`). A process that ended without a note is the
        lost one; if every ended process left a note, the first note's cause."""
        if self._dead is not None or (not now and time.monotonic() < self._next_look):
            return self._dead
        self._next_look = time.monotonic() + LOOK_EVERY
        ended = [(p, pid) for p, pid in self.local if not process_alive(pid)]
        notes = [(p, self._note(pid)) for p, pid in ended]
        silent = [p for p, note in notes if note is None]
        if silent:
            self._dead = self.lost(silent[0])
        elif notes:
            self._dead = notes[0][1]
        return self._dead

    def leaving(self, cause: str) -> None:
        """Leave the note that this process gives up because of `cause` (best effort)."""
        if self.notes is None:
            return
        try:
            os.makedirs(self.notes, exist_ok=True)
            tmp = os.path.join(self.notes, f".{self.pids[self.me]}.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(cause)
            os.replace(tmp, os.path.join(self.notes, str(self.pids[self.me])))
        except OSError:
            pass

    def _note(self, pid: int) -> str | None:
        if self.notes is None:
            return None
        try:
            with open(os.path.join(self.notes, str(pid)), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return None


    def lost(self, process: int) -> str:
        """The message naming the ranks of `process`, whose process has ended."""
        first, per = process * self.ranks_per_process, self.ranks_per_process
        ranks = f"rank {first}" if per == 1 else f"ranks {first}-{first + per - 1}"
        return f"{ranks} (process {process}, pid {self.pids[process]}) was lost: its process ended"


def process_alive(pid: int) -> bool:
    """Whether process `pid` of this host still runs (a zombie has ended; another user's
    process counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (ended, not yet reaped by its parent) has ended too
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
