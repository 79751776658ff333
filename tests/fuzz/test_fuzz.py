"""The fuzz suite's CI pass: every failure the fuzzer ever found stays fixed (replayed
in-process), and a short campaign per input kind (NXCC_FUZZ_CASES, default 800, scaled
by the kind's `short_share`) ends with no crash, hang, run over memory or wrong result.
The kinds run as parallel processes, each case in-process (`python -m tests.fuzz`); the
long run is documented in docs/hostile-input.md (and docs/contributing.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.harness import FAILING, run_case
from tests.fuzz.kinds import KINDS
from tests.paths import REPO

HERE = Path(__file__).resolve().parent
REGRESSIONS = sorted(p for p in (HERE / "regressions").glob("*/*") if p.is_file())


def test_every_kind_has_seeds(tmp_path: Path) -> None:
    for name, kind in KINDS.items():
        (tmp_path / name).mkdir()
        assert kind.seeds(tmp_path / name), name


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A work directory per kind, holding what its commands need (e.g. inputs); seeded
    with a runtime directory of their own (cores another test process holds in the default
    one would fail a seed run)."""
    dirs = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NXCC_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
        for name, kind in KINDS.items():
            dirs[name] = tmp_path_factory.mktemp(name)
            kind.seeds(dirs[name])
    return dirs


@pytest.mark.parametrize("case", REGRESSIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_regression(case: Path, work: dict[str, Path], monkeypatch: pytest.MonkeyPatch
                    ) -> None:
    kind = KINDS[case.parent.name]
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(work[kind.name] / "runtime"))
    status, reason = run_case(kind, case.read_bytes(), work[kind.name], limit=20.0)
    assert status not in FAILING, reason


def test_short_campaign(tmp_path: Path) -> None:
    per_kind = int(os.environ.get("NXCC_FUZZ_CASES", "800"))
    cases = {name: kind.short_cases(per_kind) for name, kind in KINDS.items()}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "tests.fuzz", "--kind", name, "--cases", str(cases[name]),
         "--failures", str(tmp_path / "failures")], cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for name in KINDS}
    reports = {name: p.communicate(timeout=1200)[0] for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, reports[name][-3000:]
        assert f"{name}: {cases[name]} cases" in reports[name], reports[name][-3000:]
