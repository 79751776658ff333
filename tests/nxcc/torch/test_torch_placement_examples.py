"""The placement seed's six examples (examples/torch/), run as scripts on a machine with 8
NeuronCores (trn2.3xlarge at LNC=1), each in its own process with the seed's environment:
which NeuronCore each model is loaded to and which core each execution runs on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the torch extra is not installed (pip install '.[torch]')")

from tests.cli_helpers import REPO  # noqa: E402

EXAMPLES = REPO / "examples" / "torch"
EIGHT_CORES = {"NXCC_INSTANCE_TYPE": "trn2.3xlarge", "NEURON_LOGICAL_NC_CONFIG": "1"}
TIMEOUT = 300


def environment(runtime_dir: Path, **env: str) -> dict[str, str]:
    """This process's environment without runtime variables, on the 8-core instance."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("NEURON_RT_", "NXCC_")) and k != "NEURON_LOGICAL_NC_CONFIG"}
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**clean, "PYTHONPATH": path, "NXCC_RUNTIME_DIR": str(runtime_dir),
            **EIGHT_CORES, **env}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding model.pt, written by examples/torch/trace_model.py."""
    folder = tmp_path_factory.mktemp("placement")
    done = subprocess.run([sys.executable, str(EXAMPLES / "trace_model.py")], cwd=folder,
                          env=environment(folder / "runtime"), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert (folder / "model.pt").is_file()
    return folder


class Example:
    """A running example script; `report()` waits for where its models are (read once)."""

    def __init__(self, folder: Path, script: str, runtime_dir: Path, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.nxcc.torch.example_report", str(EXAMPLES / script)],
            cwd=folder, env=environment(runtime_dir, **env), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._report: dict[str, dict[str, list[int]]] | None = None

    def report(self) -> dict[str, dict[str, list[int]]]:
        """Where its models are; it keeps its cores until it is stopped."""
        if self._report is None:
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if not line:
                _, stderr = self.proc.communicate(timeout=TIMEOUT)
                raise AssertionError(f"the example gave no report: {stderr}")
            self._report = json.loads(line)
        return self._report

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=TIMEOUT)


#: script -> the environment the seed sets for it (each gets a machine of its own).
SEED_ENVIRONMENTS = {
    "default_placement.py": {},
    "num_cores.py": {"NEURON_RT_NUM_CORES": "2"},
    "visible_cores.py": {"NEURON_RT_VISIBLE_CORES": "4-5"},
    "multiple_processes.py": {"NEURON_RT_NUM_CORES": "2"},
    "manual_core_selection.py": {"NEURON_RT_NUM_CORES": "4"},
    "automatic_multicore.py": {"NEURON_RT_NUM_CORES": "8"},
}


@pytest.fixture(scope="module")
def examples(model_dir: Path) -> Iterator[dict[str, Example]]:
    """Every example started at once (they run side by side, each on its own simulated
    instance); all stopped at the end."""
    started = {script: Example(model_dir, script, model_dir / f"machine-{script}", **env)
               for script, env in SEED_ENVIRONMENTS.items()}
    yield started
    for example in started.values():
        example.stop()


def placed(report: dict) -> dict[str, list[int]]:
    return {name: model["cores"] for name, model in report.items()}


def test_default(examples: dict[str, Example]) -> None:
    assert placed(examples["default_placement.py"].report()) == {"m0": [0], "m1": [1]}


def test_num_cores(examples: dict[str, Example]) -> None:
    assert placed(examples["num_cores.py"].report()) == {"m0": [0], "m1": [1]}


def test_visible_cores(examples: dict[str, Example]) -> None:
    assert placed(examples["visible_cores.py"].report()) == {"m0": [4], "m1": [5]}


def test_multiple_processes(examples: dict[str, Example], model_dir: Path) -> None:
    first = examples["multiple_processes.py"]
    assert placed(first.report()) == {"m0": [0], "m1": [1]}
    second = Example(model_dir, "multiple_processes.py",  # the same machine, cores taken
                     model_dir / "machine-multiple_processes.py", NEURON_RT_NUM_CORES="2")
    try:
        assert placed(second.report()) == {"m0": [2], "m1": [3]}
    finally:
        second.stop()


def test_manual_core_selection(examples: dict[str, Example]) -> None:
    assert examples["manual_core_selection.py"].report() == {
        "m0": {"cores": [3], "executions": [3, 3, 3]},
        "m1": {"cores": [0, 1], "executions": [0, 1]}}


def test_automatic_multicore(examples: dict[str, Example]) -> None:
    assert examples["automatic_multicore.py"].report() == {
        "m0": {"cores": list(range(8)), "executions": [0, 1]}}
