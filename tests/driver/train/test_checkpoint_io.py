"""Sharded checkpoints: round trip, refusal of damaged files, and atomic commits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train import checkpoint_io as ckio
from nxcc.driver.train.checkpoint_io import CheckpointError, find_latest, write_checkpoint
from nxcc.driver.train.layout import RankLayout
from tests.paths import REPO

LAYOUT = RankLayout(tp=2, pp=2, dp=2)


def shards(seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    params = {(t, p): {"w": rng.standard_normal((3, 4)).astype(np.float32),
                       "b": rng.standard_normal(4).astype(np.float32)}
              for t in range(2) for p in range(2)}
    optim = {(d, t, p): {"w.adam_m": rng.standard_normal(6).astype(np.float32),
                         "step": np.array(seed, np.int32)}
             for d in range(2) for t in range(2) for p in range(2)}
    return params, optim


def save(exp: Path, step: int) -> tuple[dict, dict]:
    params, optim = shards(step)
    write_checkpoint(str(exp), step, params, optim, {"tp": 2, "pp": 2, "dp": 2},
                     {"step": step, "epoch": 0, "batch": step})
    return params, optim


def test_round_trip(tmp_path: Path) -> None:
    assert find_latest(str(tmp_path)) is None
    save(tmp_path, 10)
    params, optim = save(tmp_path, 20)
    ck = find_latest(str(tmp_path))
    assert ck is not None and ck.step == 20 and ck.path == str(tmp_path / "checkpoints/step_20")
    assert ck.layout == {"tp": 2, "pp": 2, "dp": 2} and ck.data["batch"] == 20
    names = sorted(os.listdir(ck.path))
    assert names == sorted(["checkpoint.json", *(ckio.params_name(t, p) for t, p in params),
                            *(ckio.optim_name(d, t, p) for d, t, p in optim)])
    for (t, p), arrays in params.items():
        got = ck.params(t, p)
        assert got.keys() == arrays.keys()
        for k in arrays:
            np.testing.assert_array_equal(got[k], arrays[k])
            assert got[k].dtype == arrays[k].dtype
    for (d, t, p), arrays in optim.items():
        np.testing.assert_array_equal(ck.optim(d, t, p)["w.adam_m"], arrays["w.adam_m"])
    assert (tmp_path / "checkpoints" / "latest").read_text() == "step_20\n"


def damaged(tmp_path: Path, how: str) -> str:
    save(tmp_path, 3)
    ck = find_latest(str(tmp_path))
    assert ck is not None
    target = Path(ck.path) / ckio.params_name(1, 0)
    data = bytearray(target.read_bytes())
    if how == "truncated":
        target.write_bytes(bytes(data[:len(data) // 2]))
    elif how == "corrupt":
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    elif how == "missing":
        target.unlink()
    with pytest.raises(CheckpointError) as info:
        ck.params(1, 0)
    text = str(info.value)
    assert text.startswith("[NCC_ETRN002] ") and "params_tp1_pp0.npz" in text
    assert "\n" not in text
    ck.params(0, 0)  # the other shards still read
    return text


def test_truncated_file_refused(tmp_path: Path) -> None:
    assert "truncated" in damaged(tmp_path, "truncated")


def test_corrupt_file_refused(tmp_path: Path) -> None:
    assert "corrupt" in damaged(tmp_path, "corrupt")


def test_missing_file_refused(tmp_path: Path) -> None:
    assert "is missing" in damaged(tmp_path, "missing")


@pytest.mark.parametrize(("marker", "manifest", "fragment"), [
    ("garbage\n", None, "not a step_N folder"),
    ("step_7\n", None, "which holds no checkpoint"),
    ("step_3\n", "{not json", "is not valid JSON"),
    ("step_3\n", '{"format": "other"}', "not an nxcc checkpoint manifest"),
    ("step_3\n", '{"format": "nxcc-train-checkpoint/1", "step": 4, "files": {}}',
     "does not match its folder"),
    ("step_3\n", '{"format": "nxcc-train-checkpoint/1", "step": 3, "files": {"a": 1}}',
     "without sizes and checksums"),
])
def test_bad_marker_or_manifest_refused(tmp_path: Path, marker: str, manifest: str | None,
                                        fragment: str) -> None:
    save(tmp_path, 3)
    (tmp_path / "checkpoints" / "latest").write_text(marker)
    if manifest is not None:
        (tmp_path / "checkpoints" / "step_3" / "checkpoint.json").write_text(manifest)
    with pytest.raises(CheckpointError, match=fragment):
        find_latest(str(tmp_path))


def test_interrupted_write_leaves_the_previous_checkpoint(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    save(tmp_path, 5)
    real = ckio._write
    calls = []

    def failing(path: str, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as Ctrl-C in the middle of the third shard
        real(path, data)

    monkeypatch.setattr(ckio, "_write", failing)
    with pytest.raises(KeyboardInterrupt):
        save(tmp_path, 6)
    monkeypatch.setattr(ckio, "_write", real)
    ck = find_latest(str(tmp_path))
    assert ck is not None and ck.step == 5
    step6 = tmp_path / "checkpoints" / "step_6"
    assert sorted(os.listdir(step6)) == [ckio.params_name(0, 0), ckio.params_name(0, 1)]
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path / "checkpoints"))
    ck.params(1, 1)
    # the same step written again later commits normally
    save(tmp_path, 6)
    assert find_latest(str(tmp_path)).step == 6  # type: ignore[union-attr]


def test_commit_needs_every_shard(tmp_path: Path) -> None:
    ckio.write_shard(str(tmp_path), 1, ckio.params_name(0, 0), {"w": np.ones(2)})
    with pytest.raises(CheckpointError, match="missing"):
        ckio.commit(str(tmp_path), 1, [ckio.params_name(0, 0), ckio.params_name(1, 0)],
                    {"tp": 2, "pp": 1, "dp": 1})
    assert find_latest(str(tmp_path)) is None


CHILD = """
import sys
import numpy as np
from nxcc.driver.train.checkpoint_io import write_checkpoint
exp = sys.argv[1]
big = np.arange(2_000_000, dtype=np.float32)
for step in range(1, 10_000):
    params = {(t, 0): {"w": big + step} for t in range(2)}
    optim = {(d, t, 0): {"m": big - step} for d in range(2) for t in range(2)}
    write_checkpoint(exp, step, params, optim, {"tp": 2, "pp": 1, "dp": 2})
    print(step, flush=True)
"""


def test_killed_writer_leaves_a_complete_latest(tmp_path: Path) -> None:
    """SIGKILL at an arbitrary moment: `latest` names a checkpoint whose every file reads
    back whole (the previous one or the new one), and no temporary file is left named."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    first = child.stdout.readline()  # one checkpoint committed
    assert first.strip() == "1"
    time.sleep(0.35)
    child.send_signal(signal.SIGKILL)
    child.wait()
    ck = find_latest(str(tmp_path))
    assert ck is not None and ck.step >= 1
    for t in range(2):
        np.testing.assert_array_equal(ck.params(t, 0)["w"][:3], [ck.step, ck.step + 1,
                                                                 ck.step + 2])
    for d in range(2):
        ck.optim(d, 1, 0)
    leftovers = [n for _, _, files in os.walk(tmp_path) for n in files if n.endswith(".tmp")]
    assert leftovers == []
