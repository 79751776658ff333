"""`neuronx-cc ls` and the runtime side of `neuronx-cc run` (--repeat keeps the cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
from click.testing import CliRunner

from nxcc.backend.runtime.cores import holders as core_holders
from nxcc.backend.runtime.topology import INSTANCES
from nxcc.cli.ls_cmd import ls_cmd
from tests.backend.runtime.procs import REPO, child_env, holders, start_holder


def ls(*args: str) -> str:
    result = CliRunner().invoke(ls_cmd, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_ls_json_shows_devices_cores_and_holders(start, monkeypatch) -> None:
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "trn2.48xlarge")
    start(NEURON_RT_VISIBLE_CORES="5")
    with holders() as started:
        other = start_holder(started, NEURON_RT_NUM_CORES="2")
        [desc] = json.loads(ls("--json"))
    assert desc["instance_type"] == "trn2.48xlarge" and desc["lnc"] == 2
    assert desc["logical_cores"] == 64 and desc["physical_cores"] == 128
    assert desc["topology"] == "4x4 2D torus"
    dev1 = desc["devices"][1]
    assert dev1["logical_cores"] == [4, 5, 6, 7] and dev1["memory"] == "96 GB"
    assert dev1["connected_devices"] == [0, 2, 5, 13]
    assert dev1["cores"][1] == {"nc": 5, "physical": [10, 11], "software_id": "NC_V3d",
                                "pid": os.getpid(), "command": dev1["cores"][1]["command"]}
    assert desc["software_id"] == "NC_V3d"
    procs = {p["pid"]: p for p in desc["processes"]}
    assert procs[other.report["pid"]]["cores"] == [0, 1]
    assert "tests.backend.runtime.holder" in procs[other.report["pid"]]["command"]
    assert procs[os.getpid()]["physical_cores"] == [10, 11]


def test_ls_text_default_and_in_use(start) -> None:
    out = ls()
    assert "instance-type: trn1.32xlarge (default)" in out
    assert "| NEURON | NEURON | LOGICAL | NEURON | CONNECTED" in out
    assert "no process holds a NeuronCore" in out
    start(NXCC_INSTANCE_TYPE="inf2.24xlarge", NEURON_RT_VISIBLE_CORES="2-3")
    out = ls()
    assert "instance-type: inf2.24xlarge (in use)" in out
    assert "| 1      | 2      | 2-3     | 32 GB  | 0, 2" in out
    assert f"| nc2-3 | {os.getpid()} |" in out


def test_ls_lnc_follows_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "trn2.3xlarge")
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    [desc] = json.loads(ls("--json"))
    assert desc["logical_cores"] == 8 and desc["devices"][0]["logical_cores"] == list(range(8))
    assert {c["software_id"] for c in desc["devices"][0]["cores"]} == {"NC_V3"}
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "2")
    assert "logical-nc-config: 2 (4 logical NeuronCores NC_V3d, 8 physical)" in ls()


def test_ls_software_ids_of_each_generation(monkeypatch) -> None:
    for instance, shown in (("trn1.32xlarge", "32 logical NeuronCores NC_V2"),
                            ("inf2.xlarge", "2 logical NeuronCores NC_V2"),
                            ("trn2.48xlarge", "64 logical NeuronCores NC_V3d")):
        monkeypatch.setenv("NXCC_INSTANCE_TYPE", instance)
        assert shown in ls(), instance


def neuronx_cc(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nxcc", *args], cwd=REPO,
                            env=child_env(**env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_run_repeat_keeps_its_cores(spin, tmp_path, runtime_env) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, n=np.array(40000, np.int32))
    env = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge", "NEURON_RT_VISIBLE_CORES": "1"}
    first = neuronx_cc("run", str(spin), "--inputs", str(inputs), "--repeat", "200", "-q",
                       **env)
    try:
        deadline = time.monotonic() + 20
        while not core_holders(runtime_env, INSTANCES["trn1.2xlarge"]):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        second = neuronx_cc("run", str(spin), "--inputs", str(inputs), **env)
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "NRT_LOAD_NOT_ENOUGH_NC" in err and "NEURON_RT_VISIBLE_CORES=1" in err
        assert f"nc1 held by pid {first.pid}" in err and "--repeat 200" in err
    finally:
        first.kill()
        first.communicate(timeout=30)
    third = neuronx_cc("run", str(spin), "--inputs", str(inputs), "--repeat", "2", **env)
    out, err = third.communicate(timeout=30)
    assert third.returncode == 0, err
    assert "count: int32[]" in out and "40000" in out


def test_run_simulates_the_neffs_target_family(spin_trn2, tmp_path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, n=np.array(3, np.int32))
    # trn2 NEFF, no NXCC_INSTANCE_TYPE: trn2.48xlarge, whose default LNC is 2.
    r = neuronx_cc("run", str(spin_trn2), "--inputs", str(inputs))
    _, err = r.communicate(timeout=30)
    assert r.returncode == 1 and "trn2.48xlarge's default" in err
    assert "set NEURON_LOGICAL_NC_CONFIG=1" in err
    r = neuronx_cc("run", str(spin_trn2), "--inputs", str(inputs), NEURON_LOGICAL_NC_CONFIG="1")
    out, err = r.communicate(timeout=30)
    assert r.returncode == 0, err
    assert "3" in out
