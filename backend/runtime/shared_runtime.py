"""The process's runtimes that `nxcc.load` places models with: one per simulated instance,
shared by every model loaded on it, as one process has one Neuron runtime.

The first load onto an instance reads the `NEURON_RT_*` variables and reserves the process's
cores (`Runtime.init`); later loads share that runtime, so models go to the least used
cores as the placement seed describes. When the last model on it is closed the runtime is
closed and its cores go back, so a later load reads the variables again.

The asynchronous-execution status callback (`register_async_exec_callback`, libnrt's
`nrt_register_async_exec_callback`) belongs to the process, as libnrt's does: it is
registered on every open runtime and on each runtime opened later.
"""

from __future__ import annotations

import threading
from typing import Any

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.nrt import AsyncExecCallback, Runtime, check_callback
from nxcc.backend.runtime.topology import choose_instance


class SharedRuntimes:
    """Runtimes by instance name, each with the number of models holding it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Runtime, int]] = {}
        self._callback: tuple[AsyncExecCallback | None, Any] = (None, None)

    def acquire(self, config: RuntimeConfig, target: str | None) -> Runtime:
        """The runtime of the instance `config` and `target` choose, initialized on first
        use (NrtError when the cores cannot be had); release it with `release`."""
        name = choose_instance(config.instance_type, target).name
        with self._lock:
            held = self._open.get(name)
            if held is not None:
                self._open[name] = (held[0], held[1] + 1)
                return held[0]
            runtime = Runtime(config=config).init(target=target)
            runtime.register_async_exec_callback(*self._callback)
            self._open[name] = (runtime, 1)
            return runtime

    def register_async_exec_callback(self, callback: AsyncExecCallback | None,
                                     params: Any = None) -> None:
        """The process's status callback for asynchronous executions, on every runtime
        open now or later (None: the default, which logs the status); NrtError(INVALID) for
        a callback that is not callable."""
        check_callback(callback)
        with self._lock:
            self._callback = (callback, params)
            for runtime, _ in self._open.values():
                runtime.register_async_exec_callback(callback, params)

    def open_instances(self) -> list[str]:
        """The instances whose runtime is open (some model on them is loaded)."""
        with self._lock:
            return sorted(self._open)

    def release(self, runtime: Runtime) -> None:
        """One model less on `runtime`; the last one closes it (under the lock, so that a
        load meanwhile waits for the cores to be free)."""
        with self._lock:
            for name, (held, count) in self._open.items():
                if held is runtime:
                    if count > 1:
                        self._open[name] = (held, count - 1)
                        return
                    del self._open[name]
                    runtime.close()
                    return


RUNTIMES = SharedRuntimes()
"""This process's runtimes."""
