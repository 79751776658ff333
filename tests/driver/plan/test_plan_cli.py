"""`neuronx-cc train CONFIG.yaml --plan` as a user runs it: the text, the JSON, the exit
status (0 fits, 1 does not, 2 a bad file or flag), the pictures and the search."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.driver.train.train_yaml import DELETE, LLAMA, variant

PLANS = REPO / "examples" / "plan"
KEYS = ("fits", "hbm_per_core_bytes", "hbm_capacity_bytes", "step_time_s",
        "sequences_per_s", "tokens_per_s", "mfu")


def test_plan_needs_no_data_and_prints_one_json_object(tmp_path: Path) -> None:
    path = variant(tmp_path, data__train_dir=DELETE)
    result = neuronx_cc("train", str(path), "--plan", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert all(k in plan for k in KEYS) and plan["fits"] is True
    hbm = plan["hbm_per_core_bytes"]
    assert hbm["total"] == sum(v for k, v in hbm.items() if k != "total")
    assert plan["hbm_capacity_bytes"] == 16 * 2**30
    assert plan["layout"]["tp"] == 2 and len(plan["stages"]) == 2
    assert plan["tokens_per_s"] == pytest.approx(32 * plan["sequences_per_s"])
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_a_layout_that_does_not_fit_exits_1_with_its_plan(tmp_path: Path) -> None:
    result = neuronx_cc("train", str(PLANS / "hf_llama3_70B.yaml"), "--plan",
                        "trainer.num_nodes=1", "distributed_strategy."
                        "pipeline_model_parallel_size=1", "data.global_batch_size=32",
                        cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "DOES NOT FIT" in result.stdout and result.stderr == ""


def test_trace_and_chart_are_written(tmp_path: Path) -> None:
    trace, chart = tmp_path / "step.json", tmp_path / "hbm.svg"
    result = neuronx_cc("train", str(LLAMA), "--plan", "--quiet", "--trace", str(trace),
                        "--hbm-svg", str(chart), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert {"F0", "B0", "TP communication", "recompute", "bubble"} <= names
    assert {e["tid"] for e in events if e["ph"] == "X"} == {0, 1}
    svg = ET.parse(chart).getroot()
    assert svg.tag.endswith("svg") and len(svg.findall("{http://www.w3.org/2000/svg}rect")) > 8


@pytest.mark.parametrize(("args", "fragment"), [
    (("--instance", "trn1.32xlarge"), "--instance applies to --plan"),
    (("--plan", "--dry-run"), "give one"),
    (("--plan", "--nodes", "2"), "--nodes applies to --plan --search"),
    (("--plan", "--instance", "trn1.2xlarge"), "trainer.devices: 8 ranks per node, but "
                                               "trn1.2xlarge has 2"),
    (("--plan", "++trainer.lnc=3", "--instance", "trn2.48xlarge"), "trainer.lnc: 3"),
])
def test_bad_flags_are_one_line_and_status_2(tmp_path: Path, args: tuple[str, ...],
                                             fragment: str) -> None:
    result = neuronx_cc("train", str(LLAMA), *args, cwd=tmp_path)
    assert_one_line_error(result, fragment)
    assert result.returncode == 2


def test_search_ranks_the_layouts_that_fit(tmp_path: Path) -> None:
    result = neuronx_cc("train", str(LLAMA), "--plan", "--search", "--nodes", "1", "--json",
                        "--quiet", "trainer.devices=4", "data.global_batch_size=4",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    ranked = found["ranked"]
    assert found["layouts"] == len(ranked) and found["fitting"] > 1
    fitting = [r for r in ranked if r["fits"]]
    speeds = [r["sequences_per_s"] for r in fitting]
    assert speeds == sorted(speeds, reverse=True) and fitting[0]["exact"]
    seen = {(r["tp"], r["pp"], r["dp"], r["sequence_parallel"], r["zero1"], r["recompute"],
             r["micro_batch_size"]) for r in ranked}
    assert len(seen) == len(ranked)
    assert {(r["tp"], r["pp"]) for r in ranked} >= {(1, 1), (2, 1), (4, 1), (1, 2), (2, 2)}
    assert all(r["tp"] * r["pp"] * r["dp"] == 4 for r in ranked)
