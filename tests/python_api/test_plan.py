"""`nxcc.plan` returns what `neuronx-cc train CONFIG --plan --json` prints, searches as
`--search` does, names the ignored NxD keys in a warning, and refuses what it cannot plan
with `nxcc.CompileError` (NCC_ETRN001) naming the key."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import nxcc
from tests.driver.train.train_yaml import LLAMA
from tests.inprocess import run_cli
from tests.python_api.conftest import EXAMPLES

TIED = "++model.share_embeddings_and_output_weights=true"


def test_plan_is_what_the_command_prints_as_json(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = run_cli("train", str(LLAMA), "--plan", "--json", "trainer.num_nodes=2")
    assert outcome.status == 0, outcome.stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = nxcc.plan(LLAMA, ["trainer.num_nodes=2"])
    assert plan == json.loads(outcome.stdout)
    assert plan["machine"]["nodes"] == 2 and plan["fits"] is True
    printed = [ln.removeprefix("WARNING: ") for ln in outcome.stderr.splitlines()]
    assert [str(w.message) for w in caught] == printed
    assert list(tmp_path.iterdir()) == []  # a plan writes nothing


def test_tied_embeddings_across_stages_are_planned() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        untied = nxcc.plan(LLAMA)
        tied = nxcc.plan(LLAMA, [TIED])
    first, last = tied["stages"][0], tied["stages"][-1]
    assert first["tied_embedding_reduction_s"] > 0 and last["tied_embedding_reduction_s"] > 0
    assert all(s["tied_embedding_reduction_s"] == 0 for s in untied["stages"])
    # the last stage's head is the embedding's copy: the same parameters as an untied head
    assert last["parameters"] == untied["stages"][-1]["parameters"]


def test_search_ranks_layouts() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = nxcc.plan(LLAMA, ["trainer.devices=2", "data.global_batch_size=2",
                                  "distributed_strategy.tensor_model_parallel_size=1"],
                          search=True, nodes=1)
    assert found["nodes"] == 1 and found["fitting"] >= 1
    assert {(r["tp"], r["pp"], r["dp"]) for r in found["ranked"]} == {
        (1, 1, 2), (2, 1, 1), (1, 2, 1)}


@pytest.mark.parametrize(("config", "kwargs", "fragment"), [
    (LLAMA, {"nodes": 2}, "nodes: applies to a search"),
    (LLAMA, {"search": True, "nodes": 0}, "nodes: expected a positive integer"),
    (LLAMA, {"instance": "trn9.huge"}, "'trn9.huge' is not an instance type"),
    (LLAMA, {"instance": "inf1.xlarge"}, "'inf1.xlarge' is not an instance type"),
    (EXAMPLES / "train" / "onnx_lm.yaml", {}, "model.onnx_path: a plan is made for the "
                                              "built-in decoder"),
    (EXAMPLES / "train" / "vit.yaml", {}, "model.module: a plan is made for the built-in "
                                          "decoder"),
])
def test_what_cannot_be_planned_is_refused(config: Path, kwargs: dict[str, object],
                                           fragment: str) -> None:
    with pytest.raises(nxcc.CompileError, match="NCC_ETRN001") as err:
        nxcc.plan(config, **kwargs)  # type: ignore[arg-type]
    assert fragment in str(err.value)
