"""NeuronCore allocation across the processes of the host, as the allocation seed says.

Each physical core of the simulated instance has a lock file,
`<runtime dir>/<instance>/nc<NNN>.lock`. A process owns a core while it holds an exclusive
`fcntl.flock` on that file; the kernel drops the lock when the process exits, however it
exits (SIGKILL included), so a dead process never keeps its cores. The holder writes its pid,
command and core into the file (informational; the lock is the truth). Allocations, and
`holders()` probes, are serialised by `<runtime dir>/<instance>/alloc.lock`, so concurrent
`NEURON_RT_NUM_CORES` processes pack without fragmenting and a probe never makes an
allocation fail.

Which logical cores a process asks for (`requested_cores`):

- `NEURON_RT_VISIBLE_CORES=i` or `a-b`: exactly those (it wins over NEURON_RT_NUM_CORES);
- else `NEURON_RT_NUM_CORES=n` (n > 0): the first n free contiguous cores;
- else every core of the instance.

A job that places ranks (`job_cores`) asks instead for a block of consecutive cores starting
at a multiple of `align` (`allocate_block`: the first such block that is free).

A request that cannot be met raises `NrtError(LOAD_NOT_ENOUGH_NC)` at once, naming the cores
and the pids (and commands) holding them. Lock descriptors are close-on-exec, so child
processes do not inherit the cores (a `fork()` without exec would: do not fork a runtime).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nxcc.backend.runtime.config import ConfigError, RuntimeConfig
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance


@dataclass(frozen=True)
class Holder:
    """Who holds a physical core, as its lock file says."""

    pid: int
    command: str
    lnc: int
    logical_core: int

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command})" if self.command else f"pid {self.pid}"


def resolve_lnc(instance: Instance, configured: int | None) -> int:
    """NEURON_LOGICAL_NC_CONFIG, else the instance's default; ConfigError if not offered."""
    if configured is None:
        return instance.default_lnc
    if configured not in instance.lnc_choices:
        choices = ", ".join(str(c) for c in instance.lnc_choices)
        raise ConfigError(f"NEURON_LOGICAL_NC_CONFIG={configured} is not supported on "
                          f"{instance.name} ({instance.core_kind}); use {choices} (LNC 2 exists "
                          "only on trn2 and trn3 instances)")
    return configured


def lock_dir(runtime_dir: str | os.PathLike[str], instance: Instance, index: int = 0) -> Path:
    """Where the core locks of simulated instance number `index` of this type live."""
    return Path(runtime_dir) / (instance.name if index == 0 else f"{instance.name}.{index}")


def format_cores(cores: Sequence[int]) -> str:
    """nc3, nc0-2, nc0-2,5 (sorted, ranges collapsed)."""
    items = sorted(set(cores))
    parts: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        parts.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return "nc" + ",".join(parts) if parts else "none"


def this_command() -> str:
    """The command line of this process, shortened for lock files and messages."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            parts = [p.decode(errors="replace") for p in f.read().split(b"\0") if p]
    except OSError:
        parts = [sys.executable, *sys.argv]
    argv = " ".join([os.path.basename(parts[0]), *parts[1:]]) if parts else "?"
    return argv if len(argv) <= 200 else argv[:120] + "..." + argv[-77:]


@contextmanager
def _alloc_lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / "alloc.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _try_lock(path: Path) -> int | None:
    """An fd holding an exclusive lock on `path`, or None if another holder has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _read_holder(path: Path) -> Holder:
    try:
        data = json.loads(path.read_text() or "{}")
        return Holder(int(data.get("pid", 0)), str(data.get("command", "")),
                      int(data.get("lnc", 1)), int(data.get("logical_core", -1)))
    except (OSError, ValueError, TypeError):
        return Holder(0, "", 1, -1)


def _core_path(directory: Path, physical: int) -> Path:
    return directory / f"nc{physical:03d}.lock"


def _probe(directory: Path, physical: int) -> Holder | None:
    """The holder of `physical` (None when free). Call under the allocation lock."""
    path = _core_path(directory, physical)
    if not path.exists():
        return None
    fd = _try_lock(path)
    if fd is None:
        return _read_holder(path)
    os.close(fd)
    return None


def holders(runtime_dir: str | os.PathLike[str], instance: Instance) -> dict[int, Holder]:
    """Physical core -> its live holder, for every held core of the instance."""
    directory = lock_dir(runtime_dir, instance)
    if not directory.exists():
        return {}
    with _alloc_lock(directory):
        found = {p: _probe(directory, p) for p in range(instance.physical_cores)}
    return {p: h for p, h in found.items() if h is not None}


class CoreAllocation:
    """The logical cores this process owns (contiguous, ascending) and their locks."""

    def __init__(self, instance: Instance, lnc: int, cores: tuple[int, ...],
                 fds: list[int], directory: Path) -> None:
        self.instance = instance
        self.lnc = lnc
        self.cores = cores
        self.directory = directory
        self._fds = fds

    def release(self) -> None:
        """Give the cores back (clearing the lock files first). Idempotent."""
        fds, self._fds = self._fds, []
        if not fds:
            return
        try:
            with _alloc_lock(self.directory):
                for fd in fds:
                    os.ftruncate(fd, 0)
        except OSError:
            pass  # the locks still go with the descriptors
        finally:
            for fd in fds:
                os.close(fd)

    def __del__(self) -> None:
        if getattr(self, "_fds", None):
            self.release()

    @property
    def released(self) -> bool:
        return not self._fds

    def describe(self) -> str:
        return (f"{format_cores(self.cores)} of {self.instance.name} "
                f"(LNC={self.lnc}, {self.instance.logical_cores(self.lnc)} NeuronCores)")


def requested_cores(config: RuntimeConfig, instance: Instance, lnc: int) -> tuple[str, object]:
    """("visible", (a, b)) | ("count", n) | ("all", None); ConfigError if out of range."""
    total = instance.logical_cores(lnc)
    if config.visible_cores is not None:
        a, b = config.visible_cores
        if b >= total:
            raise ConfigError(
                f"NEURON_RT_VISIBLE_CORES={a if a == b else f'{a}-{b}'} is out of range: "
                f"{instance.name} has {total} NeuronCores at LNC={lnc}; use indices 0 to "
                f"{total - 1}")
        return ("visible", (a, b))
    if config.num_cores > 0:
        if config.num_cores > total:
            raise ConfigError(f"NEURON_RT_NUM_CORES={config.num_cores} is out of range: "
                              f"{instance.name} has {total} NeuronCores at LNC={lnc}; use 1 "
                              f"to {total} (or 0 for all)")
        return ("count", config.num_cores)
    return ("all", None)


def allocate(config: RuntimeConfig, instance: Instance, lnc: int) -> CoreAllocation:
    """Reserve this process's cores as `config` asks; NrtError(LOAD_NOT_ENOUGH_NC) if taken,
    NrtError(RESOURCE) if the runtime directory cannot be used."""
    try:
        return _allocate(config, instance, lnc)
    except OSError as exc:
        raise NrtError(NrtStatus.RESOURCE, f"cannot use the runtime directory "
                       f"{config.runtime_dir!r} (NXCC_RUNTIME_DIR) for NeuronCore locks: "
                       f"{exc.strerror or exc}") from exc


def _allocate(config: RuntimeConfig, instance: Instance, lnc: int) -> CoreAllocation:
    kind, arg = requested_cores(config, instance, lnc)
    total = instance.logical_cores(lnc)
    directory = lock_dir(config.runtime_dir, instance, config.instance_index)
    with _alloc_lock(directory):
        if kind == "count":
            assert isinstance(arg, int)  # requested_cores: ("count", n)
            n = arg
            got = _take_contiguous(directory, instance, lnc, n)
            if got is None:
                raise _refusal(directory, instance, lnc, list(range(total)),
                               f"NEURON_RT_NUM_CORES={n}: no {n} free contiguous NeuronCores")
        else:
            span = arg if kind == "visible" else (0, total - 1)
            assert isinstance(span, tuple)  # requested_cores: ("visible", (a, b))
            a, b = span
            got = _take_exact(directory, instance, lnc, list(range(a, b + 1)))
            if got is None:
                what = (f"NEURON_RT_VISIBLE_CORES={a if a == b else f'{a}-{b}'}"
                        if kind == "visible" else
                        "all NeuronCores requested (the default; set NEURON_RT_NUM_CORES or "
                        "NEURON_RT_VISIBLE_CORES to take fewer)")
                raise _refusal(directory, instance, lnc, list(range(a, b + 1)), what)
        cores, fds = got
        _record(fds, instance, lnc, cores)
    return CoreAllocation(instance, lnc, tuple(cores), fds, directory)


def allocate_block(config: RuntimeConfig, instance: Instance, lnc: int, count: int,
                   align: int, what: str) -> CoreAllocation:
    """The first free block of `count` consecutive logical cores of simulated instance
    `config.instance_index` starting at a multiple of `align`, reserved for this process;
    NrtError(LOAD_NOT_ENOUGH_NC) naming `what` and the cores' holders when there is none."""
    try:
        directory = lock_dir(config.runtime_dir, instance, config.instance_index)
        with _alloc_lock(directory):
            got = _take_contiguous(directory, instance, lnc, count, align)
            if got is None:
                raise _refusal(directory, instance, lnc,
                               list(range(instance.logical_cores(lnc))), what)
            cores, fds = got
            _record(fds, instance, lnc, cores)
    except OSError as exc:
        raise NrtError(NrtStatus.RESOURCE, f"cannot use the runtime directory "
                       f"{config.runtime_dir!r} (NXCC_RUNTIME_DIR) for NeuronCore locks: "
                       f"{exc.strerror or exc}") from exc
    return CoreAllocation(instance, lnc, tuple(cores), fds, directory)


def free_block(config: RuntimeConfig, instance: Instance, lnc: int, count: int,
               align: int) -> int | None:
    """The first logical core of the first block `allocate_block` would take now (None:
    none is free), without taking it."""
    directory = lock_dir(config.runtime_dir, instance, config.instance_index)
    if not directory.exists():
        return 0 if count <= instance.logical_cores(lnc) else None
    with _alloc_lock(directory):
        held = {p for p in range(instance.physical_cores) if _probe(directory, p) is not None}
    busy = [any(p in held for p in instance.physical_of(c, lnc))
            for c in range(instance.logical_cores(lnc))]
    for start in range(0, len(busy) - count + 1, align):
        if not any(busy[start:start + count]):
            return start
    return None


def no_block(config: RuntimeConfig, instance: Instance, lnc: int, what: str) -> NrtError:
    """The LOAD_NOT_ENOUGH_NC refusal `allocate_block` raises, naming `what` and who holds
    the cores of simulated instance `config.instance_index` now."""
    directory = lock_dir(config.runtime_dir, instance, config.instance_index)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _alloc_lock(directory):
        return _refusal(directory, instance, lnc, list(range(instance.logical_cores(lnc))),
                        what)


def _take_exact(directory: Path, instance: Instance, lnc: int, cores: list[int]
                ) -> tuple[list[int], list[int]] | None:
    fds: list[int] = []
    for logical in cores:
        for physical in instance.physical_of(logical, lnc):
            fd = _try_lock(_core_path(directory, physical))
            if fd is None:
                for f in fds:
                    os.close(f)
                return None
            fds.append(fd)
    return cores, fds


def _take_contiguous(directory: Path, instance: Instance, lnc: int, n: int, align: int = 1
                     ) -> tuple[list[int], list[int]] | None:
    """The first `n` free consecutive logical cores starting at a multiple of `align`, locked
    (None when there is no such block)."""
    total = instance.logical_cores(lnc)
    start = 0
    while start + n <= total:
        fds: list[int] = []
        failed_at = None
        for logical in range(start, start + n):
            for physical in instance.physical_of(logical, lnc):
                fd = _try_lock(_core_path(directory, physical))
                if fd is None:
                    failed_at = logical
                    break
                fds.append(fd)
            if failed_at is not None:
                break
        if failed_at is None:
            return list(range(start, start + n)), fds
        for f in fds:
            os.close(f)
        start = -(-(failed_at + 1) // align) * align
    return None


def _record(fds: list[int], instance: Instance, lnc: int, cores: list[int]) -> None:
    command = this_command()
    physical = [p for c in cores for p in instance.physical_of(c, lnc)]
    for fd, p in zip(fds, physical, strict=True):
        data = json.dumps({"pid": os.getpid(), "command": command, "instance": instance.name,
                           "lnc": lnc, "logical_core": p // lnc, "physical_core": p,
                           "since": time.strftime("%Y-%m-%dT%H:%M:%S")})
        os.ftruncate(fd, 0)
        os.pwrite(fd, data.encode(), 0)


def _refusal(directory: Path, instance: Instance, lnc: int, wanted: list[int],
             what: str) -> NrtError:
    """LOAD_NOT_ENOUGH_NC naming which of `wanted` are held and by whom."""
    by_holder: dict[str, list[int]] = {}
    free: list[int] = []
    for logical in wanted:
        for physical in instance.physical_of(logical, lnc):
            h = _probe(directory, physical)
            if h is not None:
                by_holder.setdefault(h.describe(), []).append(logical)
                break
        else:
            free.append(logical)
    held = "; ".join(f"{format_cores(cs)} held by {who}" for who, cs in by_holder.items())
    if free and by_holder:
        held += f"; free: {format_cores(free)}"
    total = instance.logical_cores(lnc)
    return NrtError(NrtStatus.LOAD_NOT_ENOUGH_NC,
                    f"{what} on {instance.name} ({total} NeuronCores at LNC={lnc}): "
                    f"{held or 'cores busy'}. A NeuronCore belongs to one process until it "
                    "exits")
