"""The runtime's logs: components NRT, NMGR, KMGR and TDRV, each with its own level and
location.

- NRT: the API (init, load, execute, unload, close, asynchronous completions);
- NMGR: the manager (core allocation, collective groups);
- KMGR: the layer between the runtime and the driver (a loaded model's collective
  placeholders bound to its placement);
- TDRV: the driver (running programs on cores, timeouts).

`configure_logging(config)` sets the `logging` loggers `nxcc.nrt.<comp>` (they do not
propagate to `nxcc`): level NEURON_RT_LOG_LEVEL_<comp>, else NEURON_RT_LOG_LEVEL (default
WARNING, as the current runtime; TRACE is below DEBUG; QUIET logs nothing), to
NEURON_RT_LOG_LOCATION_<comp> (console, syslog, both, or a file, appended), else
NEURON_RT_LOG_LOCATION (default both: console = stderr; syslog = /dev/log when present,
else UDP localhost:514). Lines look like the real runtime's:
`2023-Jan-09 20:27:41.0593 15042:15042 ERROR TDRV:exec_infer message`.
`warn_deprecated(config)` says once per process what replaces each deprecated variable set.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import threading
import time

from nxcc.backend.runtime.config import (
    COMPONENTS,
    DEPRECATED_VARIABLES,
    ConfigError,
    RuntimeConfig,
    log_sinks,
)

TRACE = 5
QUIET = logging.CRITICAL + 10
logging.addLevelName(TRACE, "TRACE")

LEVELS = {"ERROR": logging.ERROR, "WARNING": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG, "TRACE": TRACE, "QUIET": QUIET}

_lock = threading.Lock()
_owned: dict[str, list[logging.Handler]] = {}
_warned: set[str] = set()


class _NeuronFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        stamp = time.strftime("%Y-%b-%d %H:%M:%S", t) + f".{int(record.created % 1 * 1e4):04d}"
        comp = record.name.rsplit(".", 1)[-1]
        tid = threading.get_native_id()  # handlers run in the logging thread
        return (f"{stamp} {record.process}:{tid} {record.levelname} "
                f"{comp}:{record.funcName} {record.getMessage()}")


def logger(component: str) -> logging.Logger:
    """The logger of NRT, NMGR, KMGR or TDRV."""
    return logging.getLogger(f"nxcc.nrt.{component}")


def _handler(location: str, variable: str) -> logging.Handler:
    if location == "console":
        return logging.StreamHandler(sys.stderr)
    if location == "syslog":
        if os.path.exists("/dev/log"):
            try:
                return logging.handlers.SysLogHandler(address="/dev/log")
            except OSError:
                pass
        return logging.handlers.SysLogHandler()
    try:
        return logging.FileHandler(location, mode="a", delay=False)
    except OSError as exc:
        raise ConfigError(f"{variable}={location!r}: cannot open the log file "
                          f"({exc.strerror}); use console, syslog or a writable file path"
                          ) from None


def configure_logging(config: RuntimeConfig) -> None:
    """(Re)configure the component loggers from `config`. ConfigError on a bad file."""
    with _lock:
        for comp in COMPONENTS:
            log = logger(comp)
            for h in _owned.pop(comp, []):
                log.removeHandler(h)
                h.close()
            log.propagate = False
            log.setLevel(LEVELS[config.level_of(comp)])
            variable = (f"NEURON_RT_LOG_LOCATION_{comp}" if comp in config.component_locations
                        else "NEURON_RT_LOG_LOCATION")
            handlers = [_handler(sink, variable) for sink in log_sinks(config.location_of(comp))]
            for handler in handlers:
                handler.setFormatter(_NeuronFormatter())
                log.addHandler(handler)
            _owned[comp] = handlers


def warn_deprecated(config: RuntimeConfig) -> None:
    """One warning per process for each deprecated variable `config` found set, naming
    what replaces it (the variable itself changes nothing)."""
    with _lock:
        fresh = [v for v in config.deprecated_variables if v not in _warned]
        _warned.update(fresh)
    for name in fresh:
        logger("NRT").warning("%s is deprecated and ignored; use %s instead", name,
                              DEPRECATED_VARIABLES[name], stacklevel=2)  # the caller's name
