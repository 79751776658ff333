"""bench/train_profile.py on a one-layer GPT (a run of the tool, not a timing test)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO


def test_train_profile_lists_the_training_programs_kinds(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train_profile.py"), "1x128x16",
                           "--micro-batch", "2", "--vocab", "64", "--rounds", "2", "--top", "5",
                           "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("forward_backward: "))
    assert re.match(r"forward_backward: \d+ instructions, split: (True|False), median total "
                    r"[\d.]+ ms over 2 rounds, CPU time [\d.]+ ms", lines[head])
    assert lines[head + 1].startswith("by opcode: ") and "dot_general" in lines[head + 1]
    assert len([r for r in lines[head + 2:] if re.match(r"\s*[\d.]+ ms  x\d+", r)]) == 5
    kinds = json.loads((tmp_path / "train_profile-1x128x16.json").read_text())["kinds"]
    assert sum(k["count"] for k in kinds) == int(lines[head].split()[1])


def test_a_bad_shape_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train_profile.py"), "4x500x256",
                           "--results", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().startswith("ERROR: shape") and len(done.stderr.splitlines()) == 1


def test_train_profile_times_every_tp_rank_at_once(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train_profile.py"), "1x128x16",
                           "--tp", "2", "--micro-batch", "2", "--vocab", "64", "--rounds", "2",
                           "--top", "3", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(
        r"rank \d forward_backward: \d+ instructions, median total [\d.]+ ms over 2 rounds, "
        r"rank thread CPU [\d.]+ ms", line)]
    assert [lines[i][:6] for i in heads] == ["rank 0", "rank 1"]
    for i in heads:
        assert lines[i + 1].startswith("by opcode (wall/CPU): ") and "all_reduce" in lines[i + 1]
        assert all(re.match(r"\s*[\d.]+ ms\s+[\d.]+ CPU  x\d+", r) for r in lines[i + 2:i + 5])
    kinds = json.loads((tmp_path / "train_profile-1x128x16-tp2.json").read_text())["kinds"]
    for rank, i in enumerate(heads):
        assert sum(k["count"] for k in kinds if k["rank"] == rank) == int(lines[i].split()[3])
