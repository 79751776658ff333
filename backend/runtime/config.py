"""Runtime configuration from the environment (`NEURON_RT_*`), validated at init.

A bad value raises `ConfigError` naming the variable and the values it accepts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


class ConfigError(ValueError):
    """An environment variable has a value the runtime does not accept."""


def parse_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """TRUE/FALSE (any case; also 1/0) -> bool; unset -> `default`."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise ConfigError(f"{name}={raw!r} is not valid; use TRUE or FALSE")


@dataclass(frozen=True)
class RuntimeConfig:
    """The runtime settings in force."""

    validate_hash: bool = False

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> RuntimeConfig:
        env = os.environ if env is None else env
        return RuntimeConfig(validate_hash=parse_bool(env, "NEURON_RT_VALIDATE_HASH", False))
