"""Collective groups: which rank sets an instance's topology supports, and that every rank of
a group loaded the same collectives.

Rank counts (`possible_rank_counts`), from the collective-communication seed:

- trn1.32xlarge / trn1n.32xlarge (4x4 torus of 2-core devices): 2, 8 or 32 ranks, i.e. one
  device, one torus row, the whole torus; trn1.2xlarge: 2 only.
- inf2: any even count, on consecutive devices.
- trn2 (NeuronCore-v3, 4x4 torus on trn2.48xlarge): by the same rule as trn1, under the
  current LNC: powers of two within a device (2, 4 at LNC=2; 2, 4, 8 at LNC=1), one torus row
  (4 devices) and the whole torus; trn2.3xlarge: within its device only.
- trn3 (NeuronCore-v4, devices all-to-all through a switch): powers of two within a device,
  then any power-of-two number of whole devices.
- inf1: none. A group of one rank needs no link and is always accepted.

Placement (`check_rank_set`): the ranks occupy consecutive NeuronCores, aligned to the group
size on torus instances (a device, a row...). On inf2 any even number of consecutive cores
(so on consecutive devices, from any core: cores 1-2 are half of devices 0 and 1), around
the ring's wrap-around link too (cores 23 and 0 of an inf2.48xlarge, devices 11 and 0).

Groups across processes (`GroupRegistry`): each rank writes
`<runtime dir>/<instance>/groups/<group>/rank-<r>.json` (pid, world size, core, the digest
and summary of its collectives) and holds an flock on it while loaded, so the kernel marks it
dead with its process. A rank joining checks every live rank: same world size, same
collectives, rank not taken; else it fails at once with a message, never a hang.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nxcc.backend.runtime.cores import format_cores, lock_dir
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance


def possible_rank_counts(instance: Instance, lnc: int) -> tuple[int, ...]:
    """The group sizes (above 1) the instance's topology supports at this LNC."""
    per_device = instance.logical_per_device(lnc)
    total = instance.logical_cores(lnc)
    if instance.family == "inf1":
        return ()
    if instance.family == "inf2":
        return tuple(range(2, total + 1, 2))
    counts = set()
    k = 2
    while k <= per_device:
        counts.add(k)
        k *= 2
    if instance.topology == "torus" and instance.torus_shape is not None:
        counts.add(per_device * instance.torus_shape[1])
        counts.add(total)
    if instance.topology == "switch":  # all-to-all: any power-of-two number of devices
        devices = 2
        while devices <= instance.devices:
            counts.add(per_device * devices)
            devices *= 2
    return tuple(sorted(counts))


def describe_counts(instance: Instance, lnc: int) -> str:
    counts = possible_rank_counts(instance, lnc)
    if not counts:
        return f"{instance.name} supports no collective groups"
    if instance.family == "inf2" and len(counts) > 3:
        listed = f"any even number from 2 to {counts[-1]}, on consecutive devices"
    else:
        listed = ", ".join(str(c) for c in counts[:-1]) + f" or {counts[-1]}" \
            if len(counts) > 1 else str(counts[0])
    return (f"{instance.name} ({instance.describe_topology()}, LNC={lnc}) supports groups of "
            f"{listed} ranks")


def check_rank_count(instance: Instance, lnc: int, world_size: int) -> None:
    """NrtError(INVALID) unless the topology supports `world_size` ranks."""
    if world_size == 1:
        return
    if world_size not in possible_rank_counts(instance, lnc):
        raise NrtError(NrtStatus.INVALID,
                       f"a collective group of {world_size} ranks is not possible: "
                       f"{describe_counts(instance, lnc)}")


def check_rank_set(instance: Instance, lnc: int, cores: Sequence[int]) -> None:
    """`cores[r]` is rank r's (global logical) NeuronCore; NrtError(INVALID) if the set does
    not fit the topology (see the module docstring)."""
    n = len(cores)
    check_rank_count(instance, lnc, n)
    if n == 1:
        return
    ordered = sorted(cores)
    if len(set(ordered)) != n:
        raise NrtError(NrtStatus.INVALID, f"ranks share NeuronCores: {list(cores)}")
    start = ordered[0]
    contiguous = ordered == list(range(start, start + n))
    if instance.family == "inf2":
        if not (contiguous or _ring_arc(instance, lnc, ordered)):
            raise NrtError(NrtStatus.INVALID,
                           f"the {n} ranks on {format_cores(ordered)} do not occupy consecutive "
                           f"devices: {describe_counts(instance, lnc)}")
        return
    if not contiguous or start % n:
        raise NrtError(NrtStatus.INVALID,
                       f"the {n} ranks on {format_cores(ordered)} do not form a group of the "
                       f"topology: {n} ranks must occupy {n} consecutive NeuronCores starting at "
                       f"a multiple of {n}; {describe_counts(instance, lnc)}")


def _ring_arc(instance: Instance, lnc: int, ordered: list[int]) -> bool:
    """Whether sorted `ordered` cores are consecutive across a ring's wrap-around link (the
    last cores of the instance, then its first ones)."""
    if instance.topology != "ring":
        return False
    total = instance.logical_cores(lnc)
    cut = next((i for i in range(1, len(ordered)) if ordered[i] != ordered[i - 1] + 1), None)
    if cut is None:
        return False
    arc = ordered[cut:] + ordered[:cut]
    return arc == [(arc[0] + i) % total for i in range(len(arc))]


def collectives_signature(manifest: dict) -> tuple[str, str]:
    """(digest, one-line summary) of a NEFF manifest's collectives."""
    entries = manifest.get("collectives", []) or []
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]
    kinds = [str(e.get("kind", e.get("op", "?"))) if isinstance(e, dict) else "?"
             for e in entries]
    summary = f"{len(entries)} collective(s)" + (f": {', '.join(kinds[:6])}" if kinds else "")
    if len(kinds) > 6:
        summary += ", ..."
    return digest, summary


@dataclass(frozen=True)
class Member:
    """A rank as its file records it."""

    rank: int
    world_size: int
    pid: int
    core: int
    digest: str
    summary: str


class Membership:
    """This process's place in a group; `leave()` removes it (idempotent)."""

    def __init__(self, path: Path, fd: int, group_lock: Path) -> None:
        self.path = path
        self._fd: int | None = fd
        self._group_lock = group_lock

    def leave(self) -> None:
        if self._fd is None:
            return
        with _locked(self._group_lock):
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


class _locked:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


class GroupRegistry:
    """The collective groups of one simulated instance, shared by the host's processes."""

    def __init__(self, runtime_dir: str | os.PathLike[str], instance: Instance, lnc: int
                 ) -> None:
        self.instance = instance
        self.lnc = lnc
        self.root = lock_dir(runtime_dir, instance) / "groups"

    def join(self, group: str, rank: int, world_size: int, core: int, manifest: dict
             ) -> Membership:
        """Register `rank` (on global logical `core`) of `group`; NrtError(INVALID) when the
        count is impossible, the rank is taken, or a live rank disagrees."""
        if not group or "/" in group or group.startswith("."):
            raise NrtError(NrtStatus.INVALID, f"collective group name {group!r} is not valid")
        if not 0 <= rank < world_size:
            raise NrtError(NrtStatus.INVALID,
                           f"rank {rank} is outside the group's world size {world_size}")
        check_rank_count(self.instance, self.lnc, world_size)
        digest, summary = collectives_signature(manifest)
        directory = self.root / group
        with _locked(directory / ".lock"):
            live = self._live_members(directory)
            for m in live:
                self._agree(group, m, rank, world_size, digest, summary)
            path = directory / f"rank-{rank}.json"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # pragma: no cover - _live_members saw it first
                os.close(fd)
                raise NrtError(NrtStatus.INVALID, f"rank {rank} of group '{group}' is "
                               "already loaded") from None
            record = {"rank": rank, "world_size": world_size, "pid": os.getpid(), "core": core,
                      "digest": digest, "summary": summary}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            members = {m.rank: m.core for m in live} | {rank: core}
            if len(members) == world_size:
                try:
                    check_rank_set(self.instance, self.lnc,
                                   [members[r] for r in range(world_size)])
                except NrtError:
                    path.unlink(missing_ok=True)
                    os.close(fd)
                    raise
        return Membership(path, fd, directory / ".lock")

    def _live_members(self, directory: Path) -> list[Member]:
        found = []
        for path in sorted(directory.glob("rank-*.json")):
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    d = json.loads(path.read_text())
                    found.append(Member(int(d["rank"]), int(d["world_size"]), int(d["pid"]),
                                        int(d["core"]), str(d["digest"]), str(d["summary"])))
                except (OSError, ValueError, KeyError, TypeError):
                    pass
            else:
                path.unlink(missing_ok=True)  # its process is gone
            finally:
                os.close(fd)
        return found

    @staticmethod
    def _agree(group: str, m: Member, rank: int, world_size: int, digest: str,
               summary: str) -> None:
        if m.rank == rank:
            raise NrtError(NrtStatus.INVALID, f"rank {rank} of collective group '{group}' is "
                           f"already loaded by pid {m.pid} on nc{m.core}")
        if m.world_size != world_size:
            raise NrtError(NrtStatus.INVALID, f"collective group '{group}': rank {m.rank} (pid "
                           f"{m.pid}) has world size {m.world_size}, rank {rank} says "
                           f"{world_size}; every rank must agree on the world size")
        if m.digest != digest:
            raise NrtError(NrtStatus.INVALID, f"collective group '{group}': rank {rank} loaded "
                           f"different collectives from rank {m.rank} (pid {m.pid}): rank "
                           f"{m.rank} has {m.summary}, rank {rank} has {summary}; every rank "
                           "of a group must load the same collectives (the same NEFF)")
