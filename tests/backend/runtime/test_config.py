"""Every runtime variable is parsed at init; a bad value names the variable and the values."""

from __future__ import annotations

import pytest

from nxcc.backend.runtime.config import ConfigError, RuntimeConfig
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.status import NrtError, NrtStatus


def test_defaults() -> None:
    c = RuntimeConfig.from_env({})
    assert c.visible_cores is None and c.num_cores == 0
    assert (c.log_location, c.log_level) == ("console,syslog", "WARNING")
    assert c.exec_timeout == 30
    assert not (c.validate_hash or c.shared_weights or c.allow_legacy_neff)
    assert c.async_max_inflight == 0
    assert c.logical_nc_config is None and c.instance_type is None
    assert c.runtime_dir.endswith("nxcc-runtime-" + str(__import__("os").getuid()))


def test_values_are_parsed() -> None:
    c = RuntimeConfig.from_env({
        "NEURON_RT_VISIBLE_CORES": "4-5", "NEURON_RT_NUM_CORES": "3",
        "NEURON_RT_LOG_LOCATION": "SYSLOG", "NEURON_RT_LOG_LEVEL": "debug",
        "NEURON_RT_LOG_LEVEL_TDRV": "trace", "NEURON_RT_LOG_LOCATION_NMGR": "nmgr.log",
        "NEURON_RT_EXEC_TIMEOUT": "5", "NEURON_RT_VALIDATE_HASH": "true",
        "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS": "TRUE",
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": "3",
        "NEURON_RT_ALLOW_LEGACY_NEFF": "1", "NEURON_LOGICAL_NC_CONFIG": "1",
        "NXCC_INSTANCE_TYPE": "trn2.48xlarge", "NXCC_RUNTIME_DIR": "/tmp/x",
    })
    assert c.visible_cores == (4, 5) and c.num_cores == 3
    assert c.log_location == "syslog" and c.log_level == "DEBUG"
    assert c.level_of("TDRV") == "TRACE" and c.level_of("NRT") == "DEBUG"
    assert c.location_of("NMGR") == "nmgr.log" and c.location_of("NRT") == "syslog"
    assert c.exec_timeout == 5 and c.validate_hash and c.shared_weights
    assert c.async_max_inflight == 3 and c.allow_legacy_neff
    assert c.logical_nc_config == 1 and c.instance_type == "trn2.48xlarge"
    assert c.runtime_dir == "/tmp/x"
    assert RuntimeConfig.from_env({"NEURON_RT_VISIBLE_CORES": "7"}).visible_cores == (7, 7)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("NEURON_RT_VISIBLE_CORES", "a-b", "inclusive range"),
        ("NEURON_RT_VISIBLE_CORES", "5-4", "inclusive range"),
        ("NEURON_RT_VISIBLE_CORES", "1,3", "inclusive range"),
        ("NEURON_RT_NUM_CORES", "-1", "from 0 to"),
        ("NEURON_RT_NUM_CORES", "two", "from 0 to"),
        ("NEURON_RT_LOG_LOCATION", "file.log", "console, syslog or both (console,syslog)"),
        ("NEURON_RT_LOG_LOCATION", "console,file", "console, syslog"),
        ("NEURON_RT_LOG_LEVEL", "VERBOSE", "ERROR, WARNING, INFO, DEBUG, TRACE, QUIET"),
        ("NEURON_RT_LOG_LEVEL_NRT", "LOUD", "ERROR, WARNING, INFO, DEBUG, TRACE, QUIET"),
        ("NEURON_RT_LOG_LEVEL_NMGR", "1", "ERROR, WARNING"),
        ("NEURON_RT_LOG_LEVEL_TDRV", "x", "ERROR, WARNING"),
        ("NEURON_RT_LOG_LEVEL_KMGR", "LOUD", "ERROR, WARNING"),
        ("NEURON_RT_EXEC_TIMEOUT", "1.5", "from 0 to 2147483647"),
        ("NEURON_RT_EXEC_TIMEOUT", "99999999999", "from 0 to 2147483647"),
        ("NEURON_RT_VALIDATE_HASH", "yes", "TRUE or FALSE"),
        ("NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", "on", "TRUE or FALSE"),
        ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "-3", "from 0 to"),
        ("NEURON_RT_ALLOW_LEGACY_NEFF", "2", "TRUE or FALSE"),
        ("NEURON_LOGICAL_NC_CONFIG", "4", "1, 2"),
        ("NXCC_INSTANCE_TYPE", "p4d.24xlarge", "trn1.32xlarge"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_allowed_values(
        name: str, value: str, allowed: str, monkeypatch) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        Runtime().init()
    assert err.value.status == NrtStatus.INVALID and isinstance(err.value, NrtError)
    assert name in str(err.value) and allowed in str(err.value)


def test_unusable_log_file_is_refused_at_init(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NEURON_RT_LOG_LOCATION_TDRV", str(tmp_path / "no" / "such" / "t.log"))
    with pytest.raises(ConfigError, match="NEURON_RT_LOG_LOCATION_TDRV"):
        Runtime().init()


def test_log_spellings_of_the_current_runtime() -> None:
    c = RuntimeConfig.from_env({"NEURON_RT_LOG_LEVEL": "warn", "NEURON_RT_LOG_LEVEL_KMGR": "Info",
                                "NEURON_RT_LOG_LOCATION": "SYSLOG, console",
                                "NEURON_RT_LOG_LOCATION_KMGR": "syslog"})
    assert c.log_level == "WARNING" and c.level_of("KMGR") == "INFO"
    assert c.log_location == "console,syslog" and c.location_of("KMGR") == "syslog"
    assert RuntimeConfig.from_env({"NEURON_RT_LOG_LOCATION": "console"}).log_location == "console"


def test_deprecated_group_sizes_is_recorded_not_refused() -> None:
    c = RuntimeConfig.from_env({"NEURONCORE_GROUP_SIZES": "2,2"})
    assert c.deprecated_variables == ("NEURONCORE_GROUP_SIZES",) and c.num_cores == 0
    assert RuntimeConfig.from_env({}).deprecated_variables == ()
