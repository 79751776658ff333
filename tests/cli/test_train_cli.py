"""`neuronx-cc train` as a user runs it: --dry-run's layout, and one line per bad file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import assert_one_line_error, neuronx_cc
from tests.driver.train.train_yaml import GPT, LLAMA, variant


def test_dry_run_prints_the_layout(tmp_path: Path) -> None:
    result = neuronx_cc("train", str(LLAMA), "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "world: 8 ranks = 8 devices x 1 node(s); TP 2 x PP 2 x DP 2" in out
    assert "global 8 = micro 1 x DP 2 x 4 micro-batches per step" in out
    assert "TP groups: [0,1] [2,3] [4,5] [6,7]" in out
    assert "DP groups: [0,2] [1,3] [4,6] [5,7]" in out
    assert "PP groups: [0,4] [1,5] [2,6] [3,7]" in out
    assert "llama, 4 layers, hidden 64, 4 heads (2 key/value)" in out
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("WARNING: NxD Training keys accepted")
    assert "model.fusions.flash_attention" in warning[0]
    assert list(tmp_path.iterdir()) == []  # nothing written (exp_dir is null: nemo_experiments)


def test_dry_run_json_with_overrides(tmp_path: Path) -> None:
    result = neuronx_cc("train", str(GPT), "--dry-run", "--json", "--quiet",
                        "distributed_strategy.tensor_model_parallel_size=4",
                        "trainer.devices=8", "data.global_batch_size=16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    info = json.loads(result.stdout)
    assert (info["tp"], info["pp"], info["dp"], info["world_size"]) == (4, 1, 2, 8)
    assert info["micro_batches_per_step"] == 8
    assert info["groups"]["tp"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert info["groups"]["dp"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert info["ranks"][5] == {"rank": 5, "tp": 1, "pp": 0, "dp": 1}
    assert info["data"]["tokens"] == 6714 and info["model"]["family"] == "gpt"


@pytest.mark.parametrize(("changes", "fragments"), [
    ({"trainer__max_step": 5}, ("[NCC_ETRN001] trainer.max_step:", "'trainer.max_steps'")),
    ({"trainer__devices": "many"}, ("[NCC_ETRN001] trainer.devices:", "expected an integer")),
    ({"trainer__devices": 6}, ("[NCC_ETRN001] distributed_strategy.tensor_model_parallel_size:",
                               "= 6 ranks", "2 x 2 = 4")),
    ({"data__global_batch_size": 7}, ("[NCC_ETRN001] data.global_batch_size:", "7",
                                      "1 x 2 = 2")),
    ({"model__num_layers": 1}, ("[NCC_ETRN001] model.num_layers:", "num_layers 1",
                                "too few for pipeline_model_parallel_size 2")),
    ({"data__train_dir": "/nonexistent/tokens"}, ("[NCC_ETRN001] data.train_dir:",
                                                  "does not exist")),
    ({"trainer__max_steps": "${multiply:2,3}"}, ("[NCC_ETRN001] trainer.max_steps:",
                                                 "interpolation")),
    ({"precision__type": "bf16"}, ("[NCC_ETRN001] precision.type:", "bf16SR")),
])
def test_bad_yaml_is_one_line_and_writes_nothing(tmp_path: Path, changes: dict,
                                                 fragments: tuple[str, ...]) -> None:
    path = variant(tmp_path, **changes)
    for extra in ((), ("--dry-run",)):
        result = neuronx_cc("train", str(path), *extra, cwd=tmp_path)
        line = assert_one_line_error(result, *fragments)
        assert line.startswith("ERROR: [NCC_ETRN001] ")
        assert result.returncode == 2
        assert not (tmp_path / "exp").exists()


def test_short_corpus_says_how_many_tokens(tmp_path: Path) -> None:
    data = tmp_path / "tokens"
    data.mkdir()
    np.save(data / "a.npy", np.arange(100, dtype=np.int32))
    result = neuronx_cc("train", str(variant(tmp_path, data__train_dir=str(data))),
                        "--dry-run", cwd=tmp_path)
    assert_one_line_error(result, "data.train_dir:", "holds 100 tokens", "needs 257")
    assert not (tmp_path / "exp").exists()


def test_yaml_syntax_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer: {devices: 8\n")
    assert_one_line_error(neuronx_cc("train", str(bad), cwd=tmp_path), "[NCC_ETRN001]",
                          "is not valid YAML at line")
    assert_one_line_error(neuronx_cc("train", str(tmp_path / "none.yaml"), cwd=tmp_path),
                          "[NCC_ETRN001]", "cannot read the configuration")
    assert_one_line_error(neuronx_cc("train", str(LLAMA), "trainer.devices", cwd=tmp_path),
                          "[NCC_ETRN001] trainer.devices:", "KEY.PATH=VALUE")
