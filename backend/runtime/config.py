"""Runtime configuration from the environment, parsed and validated in one place.

Every variable of the runtime-configuration seed, plus nxcc's own:

| variable | values | default |
| --- | --- | --- |
| NEURON_RT_VISIBLE_CORES | a core index (`3`) or an inclusive range (`4-5`) | unset |
| NEURON_RT_NUM_CORES | 0 .. cores of the instance; 0 means all | 0 |
| NEURON_RT_LOG_LOCATION | console, syslog, or both (`console,syslog`) | both |
| NEURON_RT_LOG_LEVEL | ERROR, WARNING (or WARN), INFO, DEBUG, TRACE, QUIET | WARNING |
| NEURON_RT_LOG_LEVEL_{NRT,NMGR,KMGR,TDRV} | as NEURON_RT_LOG_LEVEL | NEURON_RT_LOG_LEVEL |
| NEURON_RT_LOG_LOCATION_{NRT,...} | as NEURON_RT_LOG_LOCATION, or a file | the global one |
| NEURON_RT_EXEC_TIMEOUT | seconds, 0 .. INT_MAX; 0 means no timeout | 30 |
| NEURON_RT_VALIDATE_HASH | TRUE, FALSE | FALSE |
| NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS | TRUE, FALSE | FALSE |
| NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS | 0 .. INT_MAX; 0 disables async | 0 |
| NEURON_RT_ALLOW_LEGACY_NEFF | TRUE, FALSE | FALSE |
| NEURON_LOGICAL_NC_CONFIG | 1, 2 (2 only on trn2 and trn3) | 2 on trn2 and trn3, 1 elsewhere |
| NXCC_INSTANCE_TYPE | an instance of `topology.INSTANCES` | the NEFF's target family |
| NXCC_RUNTIME_DIR | a directory for the core lock files | `$TMPDIR/nxcc-runtime-<uid>` |
| NXCC_RANKS_PER_INSTANCE | ranks per simulated instance of a multi-process job | all on one |
| NXCC_INSTANCE_INDEX | which simulated instance this process is on (the MPI job sets it) | 0 |
| NEURONCORE_GROUP_SIZES | deprecated: ignored, with one warning naming its replacements | unset |

The logging defaults are those of the current runtime (AWS's "Reference: Neuron Runtime
environment variables": WARN, to both the console and syslog); the older configuration
guide's table (ERROR, console) describes earlier releases.

Booleans accept TRUE/FALSE in any case, and 1/0. Log levels and locations are
case-insensitive. A bad value raises `ConfigError` (an `NrtError` with status INVALID and a
`ValueError`) naming the variable and the values it accepts. Checks that need the instance
(a core index beyond the instance, LNC 2 off trn2 and trn3) are made by `cores` and
`topology` at init.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import INSTANCES

INT_MAX = 2**31 - 1
LOG_LEVELS = ("ERROR", "WARNING", "INFO", "DEBUG", "TRACE", "QUIET")
LEVEL_ALIASES = {"WARN": "WARNING"}
LOG_LOCATIONS = ("console", "syslog")
BOTH_LOCATIONS = "console,syslog"
DEFAULT_LOG_LEVEL = "WARNING"
DEFAULT_LOG_LOCATION = BOTH_LOCATIONS
COMPONENTS = ("NRT", "NMGR", "KMGR", "TDRV")
#: Variables of earlier runtimes that are read only to say what replaces them.
DEPRECATED_VARIABLES = {
    "NEURONCORE_GROUP_SIZES": "NEURON_RT_VISIBLE_CORES or NEURON_RT_NUM_CORES",
}
DEFAULT_EXEC_TIMEOUT = 30

KNOWN_VARIABLES = frozenset(
    {
        "NEURON_RT_VISIBLE_CORES",
        "NEURON_RT_NUM_CORES",
        "NEURON_RT_LOG_LOCATION",
        "NEURON_RT_LOG_LEVEL",
        "NEURON_RT_EXEC_TIMEOUT",
        "NEURON_RT_VALIDATE_HASH",
        "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS",
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
        "NEURON_RT_ALLOW_LEGACY_NEFF",
    }
    | {f"NEURON_RT_LOG_LEVEL_{c}" for c in COMPONENTS}
    | {f"NEURON_RT_LOG_LOCATION_{c}" for c in COMPONENTS}
    | set(DEPRECATED_VARIABLES)
)


class ConfigError(NrtError, ValueError):
    """An environment variable has a value the runtime does not accept (status INVALID)."""

    def __init__(self, message: str) -> None:
        super().__init__(NrtStatus.INVALID, message)

    def __str__(self) -> str:
        return str(self.args[0])


def _raw(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value, stripped; None when unset or empty."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    return raw.strip()


def parse_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """TRUE/FALSE (any case; also 1/0) -> bool; unset -> `default`."""
    raw = _raw(env, name)
    if raw is None:
        return default
    value = raw.lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise ConfigError(f"{name}={env.get(name)!r} is not valid; use TRUE or FALSE")


def parse_int(env: Mapping[str, str], name: str, default: int, low: int, high: int,
              meaning: str = "") -> int:
    """A decimal integer in [low, high]; unset -> `default`."""
    raw = _raw(env, name)
    if raw is None:
        return default
    allowed = f"use an integer from {low} to {high}{meaning}"
    try:
        value = int(raw, 10)
    except ValueError:
        raise ConfigError(f"{name}={env.get(name)!r} is not valid; {allowed}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range; {allowed}")
    return value


def parse_choice(env: Mapping[str, str], name: str, choices: tuple[str, ...],
                 default: str | None, upper: bool,
                 aliases: Mapping[str, str] | None = None) -> str | None:
    """One of `choices` (compared case-insensitively; `aliases` maps other spellings to
    one of them); unset -> `default`."""
    raw = _raw(env, name)
    if raw is None:
        return default
    value = raw.upper() if upper else raw.lower()
    value = (aliases or {}).get(value, value)
    if value not in choices:
        raise ConfigError(f"{name}={env.get(name)!r} is not valid; use one of "
                          f"{', '.join(choices)}")
    return value


def parse_core_range(env: Mapping[str, str], name: str) -> tuple[int, int] | None:
    """`N` -> (N, N); `A-B` with A <= B -> (A, B); unset -> None."""
    raw = _raw(env, name)
    if raw is None:
        return None
    allowed = "use a NeuronCore index (e.g. 3) or an inclusive range (e.g. 4-5)"
    first, sep, last = raw.partition("-")
    try:
        a = int(first.strip(), 10)
        b = int(last.strip(), 10) if sep else a
    except ValueError:
        raise ConfigError(f"{name}={env.get(name)!r} is not valid; {allowed}") from None
    if a < 0 or b < a:
        raise ConfigError(f"{name}={env.get(name)!r} is not valid; {allowed}, "
                          "with the first index not above the last")
    return (a, b)


def parse_log_location(env: Mapping[str, str], name: str, default: str,
                       allow_file: bool) -> str:
    """console, syslog or both (`console,syslog`, in either order; lowercased), or, when
    `allow_file`, any other text as a file path."""
    raw = _raw(env, name)
    if raw is None:
        return default
    sinks = {part.strip().lower() for part in raw.split(",")}
    if sinks and sinks <= set(LOG_LOCATIONS):
        return ",".join(s for s in LOG_LOCATIONS if s in sinks)
    if allow_file:
        return raw
    raise ConfigError(f"{name}={env.get(name)!r} is not valid; use one of "
                      f"{', '.join(LOG_LOCATIONS)} or both ({BOTH_LOCATIONS})")


def log_sinks(location: str) -> list[str]:
    """The sinks of a parsed location: console and/or syslog, or one file path."""
    parts = location.split(",")
    return parts if set(parts) <= set(LOG_LOCATIONS) else [location]


def default_runtime_dir() -> str:
    """`$TMPDIR/nxcc-runtime-<uid>`: where core lock files live unless NXCC_RUNTIME_DIR moves it."""
    return os.path.join(tempfile.gettempdir(), f"nxcc-runtime-{os.getuid()}")


@dataclass(frozen=True)
class RuntimeConfig:
    """The runtime settings in force (see the module docstring for each one's default)."""

    validate_hash: bool = False
    visible_cores: tuple[int, int] | None = None
    num_cores: int = 0
    log_location: str = DEFAULT_LOG_LOCATION
    log_level: str = DEFAULT_LOG_LEVEL
    component_levels: dict[str, str] = field(default_factory=dict)
    component_locations: dict[str, str] = field(default_factory=dict)
    exec_timeout: int = DEFAULT_EXEC_TIMEOUT
    shared_weights: bool = False
    async_max_inflight: int = 0
    allow_legacy_neff: bool = False
    logical_nc_config: int | None = None
    instance_type: str | None = None
    runtime_dir: str = field(default_factory=default_runtime_dir)
    ranks_per_instance: int | None = None
    instance_index: int = 0
    unknown_variables: tuple[str, ...] = ()
    deprecated_variables: tuple[str, ...] = ()

    def level_of(self, component: str) -> str:
        """The log level of `component` (its own variable, else NEURON_RT_LOG_LEVEL)."""
        return self.component_levels.get(component, self.log_level)

    def location_of(self, component: str) -> str:
        """console, syslog or a file path for `component`."""
        return self.component_locations.get(component, self.log_location)

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> RuntimeConfig:
        """Parse and validate every variable; ConfigError on the first bad one."""
        env = os.environ if env is None else env
        levels = {}
        locations = {}
        for comp in COMPONENTS:
            level = parse_choice(env, f"NEURON_RT_LOG_LEVEL_{comp}", LOG_LEVELS, None, True,
                                 LEVEL_ALIASES)
            if level is not None:
                levels[comp] = level
            if _raw(env, f"NEURON_RT_LOG_LOCATION_{comp}") is not None:
                locations[comp] = parse_log_location(env, f"NEURON_RT_LOG_LOCATION_{comp}",
                                                     DEFAULT_LOG_LOCATION, allow_file=True)
        instance = _raw(env, "NXCC_INSTANCE_TYPE")
        if instance is not None and instance not in INSTANCES:
            raise ConfigError(f"NXCC_INSTANCE_TYPE={instance!r} is not a known instance; use "
                              f"one of {', '.join(INSTANCES)}")
        lnc = parse_choice(env, "NEURON_LOGICAL_NC_CONFIG", ("1", "2"), None, True)
        return RuntimeConfig(
            validate_hash=parse_bool(env, "NEURON_RT_VALIDATE_HASH", False),
            visible_cores=parse_core_range(env, "NEURON_RT_VISIBLE_CORES"),
            num_cores=parse_int(env, "NEURON_RT_NUM_CORES", 0, 0, INT_MAX,
                                " (0 means all cores)"),
            log_location=parse_log_location(env, "NEURON_RT_LOG_LOCATION",
                                            DEFAULT_LOG_LOCATION, allow_file=False),
            log_level=parse_choice(env, "NEURON_RT_LOG_LEVEL", LOG_LEVELS, DEFAULT_LOG_LEVEL,
                                   True, LEVEL_ALIASES) or DEFAULT_LOG_LEVEL,
            component_levels=levels,
            component_locations=locations,
            exec_timeout=parse_int(env, "NEURON_RT_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT, 0,
                                   INT_MAX, " seconds (0 means no timeout)"),
            shared_weights=parse_bool(env, "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", False),
            async_max_inflight=parse_int(env, "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", 0,
                                         0, INT_MAX, " (0 disables asynchronous execution)"),
            allow_legacy_neff=parse_bool(env, "NEURON_RT_ALLOW_LEGACY_NEFF", False),
            logical_nc_config=None if lnc is None else int(lnc),
            instance_type=instance,
            runtime_dir=_raw(env, "NXCC_RUNTIME_DIR") or default_runtime_dir(),
            ranks_per_instance=parse_int(env, "NXCC_RANKS_PER_INSTANCE", 0, 1, INT_MAX,
                                         " ranks") or None,
            instance_index=parse_int(env, "NXCC_INSTANCE_INDEX", 0, 0, INT_MAX, ""),
            unknown_variables=tuple(sorted(
                k for k in env if k.startswith("NEURON_RT_") and k not in KNOWN_VARIABLES)),
            deprecated_variables=tuple(sorted(k for k in DEPRECATED_VARIABLES
                                              if _raw(env, k) is not None)),
        )
