"""A training run never replaces or misreads a checkpoint: a lost `latest` is refused with
every step folder intact, a run that would save over a committed step is refused before it
writes, `exp_manager.resume_from_checkpoint` resumes from a chosen step, an interrupted
save's folder is set aside, and a checkpoint whose arrays were altered (and re-hashed) is
refused before the first step, in the same layout and through the resharding path."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.driver.train.train_yaml import EXAMPLES
from tests.inprocess import assert_clean_error, run_cli

MODEL = EXAMPLES / "tiny_lm.onnx"
PARAMS, OPTIM = "params_tp0_pp0.npz", "optim_dp0_tp0_pp0.npz"


def config(tmp: Path, devices: int = 1, steps: int = 2) -> Path:
    """The ONNX language model of examples/train, saving every step into tmp/exp."""
    tree = {
        "name": "lm", "trainer": {"devices": devices, "max_steps": steps,
                                  "log_every_n_steps": 1},
        "exp_manager": {"exp_dir": str(tmp / "exp"), "resume_if_exists": True,
                        "create_checkpoint_callback": True,
                        "checkpoint_callback_params": {"every_n_train_steps": 1}},
        "distributed_strategy": {"zero1": devices > 1},
        "data": {"micro_batch_size": 2, "global_batch_size": 4, "seq_length": 32,
                 "train_dir": str(EXAMPLES / "data")},
        "model": {"onnx_path": str(MODEL), "onnx_loss_input": "logits",
                  "onnx_label_input": "labels", "optim": {"name": "adamw", "lr": 3e-3}},
    }
    path = tmp / f"lm{devices}.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def train(path: Path, *overrides: str):  # noqa: ANN201  (an inprocess.Outcome)
    return run_cli("train", str(path), "--quiet", *overrides)


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-step run (step_1 and step_2 saved) to copy from."""
    tmp = tmp_path_factory.mktemp("trained")
    assert train(config(tmp)).status == 0
    return tmp / "exp"


def fresh(trained: Path, tmp: Path) -> Path:
    import shutil

    shutil.copytree(trained, tmp / "exp")
    return tmp / "exp"


def test_lost_latest_refused_and_every_step_kept(trained: Path, tmp_path: Path) -> None:
    exp = fresh(trained, tmp_path)
    (exp / "checkpoints" / "latest").unlink()
    before = digests(exp / "checkpoints")
    line = assert_clean_error(train(config(tmp_path)), "[NCC_ETRN002]", "latest: is missing",
                              "step_1, step_2", "exp_manager.resume_from_checkpoint=")
    assert str(exp / "checkpoints" / "step_2") in line
    assert digests(exp / "checkpoints") == before


@pytest.mark.parametrize("marker", ["garbage\n", "step_9\n", ""])
def test_invalid_latest_refused(trained: Path, tmp_path: Path, marker: str) -> None:
    exp = fresh(trained, tmp_path)
    (exp / "checkpoints" / "latest").write_text(marker)
    before = digests(exp / "checkpoints")
    assert_clean_error(train(config(tmp_path)), "[NCC_ETRN002]", "step_1, step_2")
    assert digests(exp / "checkpoints") == before


def test_starting_over_a_committed_step_refused(trained: Path, tmp_path: Path) -> None:
    exp = fresh(trained, tmp_path)
    before = digests(exp)
    assert_clean_error(train(config(tmp_path), "exp_manager.resume_if_exists=false"),
                       "[NCC_ETRN002]", "step_1: holds a checkpoint this run would write over",
                       f"resume_from_checkpoint={exp / 'checkpoints' / 'step_2'}")
    assert digests(exp) == before


def test_resume_from_a_chosen_step(trained: Path, tmp_path: Path) -> None:
    exp = fresh(trained, tmp_path)
    (exp / "checkpoints" / "latest").unlink()
    step2 = exp / "checkpoints" / "step_2"
    kept = digests(step2)
    out = train(config(tmp_path, steps=3), f"++exp_manager.resume_from_checkpoint={step2}")
    assert out.status == 0, out.stderr
    assert "trained steps 3..3" in out.stdout
    assert (exp / "checkpoints" / "latest").read_text() == "step_3\n"
    assert digests(step2) == kept
    # from step 1 the run would save step 2 again: refused
    assert_clean_error(train(config(tmp_path, steps=3), "++exp_manager.resume_from_checkpoint="
                             f"{exp / 'checkpoints' / 'step_1'}"), "step_2: holds a checkpoint")


def test_interrupted_save_set_aside(trained: Path, tmp_path: Path) -> None:
    exp = fresh(trained, tmp_path)
    leftover = exp / "checkpoints" / "step_3"
    leftover.mkdir()
    (leftover / PARAMS).write_bytes(b"half a shard")
    out = train(config(tmp_path, steps=3))
    assert out.status == 0, out.stderr
    assert f"set aside the folder of an interrupted save as {leftover}.interrupted" in out.stdout
    assert (exp / "checkpoints" / "step_3.interrupted" / PARAMS).read_bytes() == b"half a shard"
    assert (exp / "checkpoints" / "latest").read_text() == "step_3\n"


def _rewrite(folder: Path, name: str, change: str) -> None:
    """Change one shard's arrays as a careless tool would, and re-hash it in the manifest."""
    path = folder / name
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    first = sorted(arrays)[0]
    if change == "scalar":
        arrays[first] = np.float32(0.5)
    elif change == "int32":
        arrays[first] = arrays[first].astype(np.int32)
    elif change == "extra":
        arrays["extra"] = np.zeros(3, np.float32)
    elif change == "short":
        arrays[first] = arrays[first][:-1]
    elif change == "missing":
        del arrays[first]
    elif change == "float64":
        arrays[first] = arrays[first].astype(np.float64)
    np.savez(path, **arrays)
    manifest = json.loads((folder / "checkpoint.json").read_text())
    data = path.read_bytes()
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (folder / "checkpoint.json").write_text(json.dumps(manifest))


CHANGES = [(PARAMS, "scalar", "as float32[]"), (OPTIM, "int32", "as int32["),
           (PARAMS, "extra", "holds 'extra', which is not an array of this model"),
           (OPTIM, "short", "; this model and layout keep float32["),
           (OPTIM, "missing", "lacks 'slot0'"), (PARAMS, "float64", "as float64[")]


@pytest.mark.parametrize(("shard", "change", "fragment"), CHANGES,
                         ids=[f"{s[:5]}-{c}" for s, c, _ in CHANGES])
@pytest.mark.parametrize("devices", [1, 2], ids=["same-layout", "resharded"])
def test_altered_arrays_refused_before_a_step(trained: Path, tmp_path: Path, shard: str,
                                              change: str, fragment: str, devices: int
                                              ) -> None:
    exp = fresh(trained, tmp_path)
    _rewrite(exp / "checkpoints" / "step_2", shard, change)
    metrics = (exp / "metrics.jsonl").read_bytes()
    if devices == 2:  # the shards are joined first: the first misfit found is named
        fragment = str(exp / "checkpoints" / "step_2")
    assert_clean_error(train(config(tmp_path, devices=devices, steps=3)), "[NCC_ETRN002]",
                       fragment)
    assert not (exp / "checkpoints" / "step_3").exists()
    assert (exp / "metrics.jsonl").read_bytes() == metrics


def test_manifest_nested_10000_deep(trained: Path, tmp_path: Path) -> None:
    exp = fresh(trained, tmp_path)
    (exp / "checkpoints" / "step_2" / "checkpoint.json").write_text("[" * 10_000 + "]" * 10_000)
    assert_clean_error(train(config(tmp_path, steps=3)), "[NCC_ETRN002]",
                       "checkpoint.json: JSON nested 10000 deep")


def test_hostile_metrics_file(trained: Path, tmp_path: Path) -> None:
    """The metrics file read back on a resume: lines nested 10,000 deep or not objects are
    skipped; a FIFO or a link in its place is refused before training (the run would write
    through it), and the link's target is left as it was."""
    exp = fresh(trained, tmp_path)
    metrics = exp / "metrics.jsonl"
    good = metrics.read_text()
    metrics.write_text(good + "[" * 10_000 + "]" * 10_000 + "\n[1, 2]\n")
    out = train(config(tmp_path, steps=3))
    assert out.status == 0, out.stderr
    assert [json.loads(x)["step"] for x in metrics.read_text().splitlines()] == [1, 2, 3]
    target = tmp_path / "precious.txt"
    target.write_text("mine")
    metrics.unlink()
    metrics.symlink_to(target)
    assert_clean_error(train(config(tmp_path, steps=4)), "[NCC_ETRN001]",
                       "metrics.jsonl is not a regular file")
    assert target.read_text() == "mine"
    metrics.unlink()
    os.mkfifo(metrics)
    assert_clean_error(train(config(tmp_path, steps=4)), "metrics.jsonl is not a regular file")


def test_configuration_that_is_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "lm.yaml")
    assert_clean_error(train(tmp_path / "lm.yaml"), "[NCC_ETRN001]", "is a FIFO")
