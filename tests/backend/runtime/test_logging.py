"""NEURON_RT_LOG_LEVEL, NEURON_RT_LOG_LOCATION and their per-component forms."""

from __future__ import annotations

import logging.handlers
import re

import pytest

from nxcc.backend.runtime.log import TRACE, logger
from nxcc.backend.runtime.status import NrtError
from tests.paths import REPO

TRN1 = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge"}
LINE = re.compile(r"^\d{4}-\w{3}-\d\d \d\d:\d\d:\d\d\.\d{4} \d+:\d+ (\w+) (NRT|NMGR|KMGR|TDRV):\w+ ")
COMPONENTS = ("NRT", "NMGR", "KMGR", "TDRV")


def bad_neff(tmp_path):
    path = tmp_path / "bad.neff"
    path.write_bytes(b"not a neff")
    return path


def test_default_is_warning_to_console_and_syslog(start, spin, tmp_path, capfd) -> None:
    rt = start(**TRN1)
    rt.load(spin)
    for comp in COMPONENTS:  # the current runtime's default: WARN, console and syslog
        log = logger(comp)
        # pytest attaches its capture handler to non-propagating loggers: not the runtime's
        kinds = {type(h) for h in log.handlers if not type(h).__module__.startswith("_pytest")}
        assert log.level == logging.WARNING, comp
        assert kinds == {logging.StreamHandler, logging.handlers.SysLogHandler}, comp
    with pytest.raises(NrtError):
        rt.load(bad_neff(tmp_path))
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and LINE.match(err[0]).group(1, 2) == ("ERROR", "NRT")
    assert "failed to load NEFF" in err[0]


def test_info_level_shows_loads(start, spin, capfd) -> None:
    rt = start(NEURON_RT_LOG_LEVEL="INFO", **TRN1)
    rt.load(spin)
    err = capfd.readouterr().err
    assert "NMGR:init reserved nc0-1 of trn1.2xlarge" in err
    assert "NRT:load loaded 'spin-trn1-lnc1' on nc0" in err


def test_quiet_disables_console_logging(start, tmp_path, capfd) -> None:
    rt = start(NEURON_RT_LOG_LOCATION="console", NEURON_RT_LOG_LEVEL="QUIET", **TRN1)
    with pytest.raises(NrtError):
        rt.load(bad_neff(tmp_path))
    assert capfd.readouterr().err == ""


def test_component_levels(start, spin, capfd) -> None:
    rt = start(NEURON_RT_LOG_LEVEL_NMGR="INFO", **TRN1)
    rt.load(spin)
    err = capfd.readouterr().err
    assert "NMGR:init reserved" in err and "NRT:load" not in err
    start(NEURON_RT_LOG_LEVEL="INFO", NEURON_RT_LOG_LEVEL_NMGR="ERROR", NEURON_RT_NUM_CORES="1",
          NXCC_INSTANCE_TYPE="trn1.32xlarge").load(spin)
    err = capfd.readouterr().err
    assert "NMGR:" not in err and "NRT:load" in err


def test_trace_is_below_debug(start) -> None:
    start(NEURON_RT_LOG_LEVEL_TDRV="TRACE", **TRN1)
    assert logger("TDRV").isEnabledFor(TRACE) and not logger("NRT").isEnabledFor(TRACE)


def test_component_location_is_a_file(start, spin, tmp_path, capfd) -> None:
    nrt_log = tmp_path / "nrt.log"
    rt = start(NEURON_RT_LOG_LEVEL="INFO", NEURON_RT_LOG_LOCATION_NRT=str(nrt_log), **TRN1)
    rt.load(spin)
    err = capfd.readouterr().err
    assert "NMGR:init" in err and "NRT:" not in err
    lines = nrt_log.read_text().splitlines()
    assert lines and all(LINE.match(x).group(2) == "NRT" for x in lines)
    assert any("loaded 'spin-trn1-lnc1'" in x for x in lines)


def test_syslog_location(start, tmp_path, capfd) -> None:
    rt = start(NEURON_RT_LOG_LOCATION="syslog", **TRN1)
    for comp in COMPONENTS:
        kinds = [type(h) for h in logger(comp).handlers]
        assert logging.handlers.SysLogHandler in kinds and logging.StreamHandler not in kinds
    with pytest.raises(NrtError):
        rt.load(bad_neff(tmp_path))
    assert capfd.readouterr().err == ""  # to syslog, not the console


def test_kmgr_is_a_component(start, tmp_path, capfd) -> None:
    """KMGR (the seed's component list) has its own level: it logs how a loaded model's
    collective placeholders were bound."""
    import nxcc

    mlp = REPO / "examples/mlp.onnx"
    neff = nxcc.compile(mlp, target="trn2", lnc=2, output=tmp_path / "mlp2.neff",
                        no_cache=True)
    rt = start(NEURON_RT_LOG_LEVEL_KMGR="INFO", NXCC_INSTANCE_TYPE="trn2.3xlarge",
               NEURON_RT_NUM_CORES="1")
    model = rt.load(neff.path)
    err = capfd.readouterr().err.splitlines()
    kmgr = [x for x in err if LINE.match(x) and LINE.match(x).group(2) == "KMGR"]
    assert model.bindings and len(kmgr) == len(model.bindings)
    assert all("INFO" in x and "shared_memory" in x for x in kmgr)
    assert not [x for x in err if LINE.match(x) and LINE.match(x).group(2) == "NRT"]


def test_group_sizes_warns_once(start, spin, capfd, monkeypatch) -> None:
    from nxcc.backend.runtime import log

    monkeypatch.setattr(log, "_warned", set())
    start(NEURONCORE_GROUP_SIZES="1,1", NEURON_RT_NUM_CORES="1", **TRN1)
    start(NEURONCORE_GROUP_SIZES="1,1", NEURON_RT_NUM_CORES="1", **TRN1)
    err = [x for x in capfd.readouterr().err.splitlines() if "NEURONCORE_GROUP_SIZES" in x]
    assert len(err) == 1 and LINE.match(err[0]).group(1, 2) == ("WARNING", "NRT")
    assert "use NEURON_RT_VISIBLE_CORES or NEURON_RT_NUM_CORES instead" in err[0]
