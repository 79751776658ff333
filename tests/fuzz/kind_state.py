"""Training state files (`run --load-state FILE.npz`, as `--save-state` writes them): the
seeds are the states of two training steps (mlp with AdamW, mlp with SGD and bf16 mixed
precision) saved after one step; mutants change a member's `.npy` header (shape, dtype),
drop, rename, duplicate or add members, swap two members' arrays, or flip the bytes; each
resumes the step it belongs to for one step and saves the state again."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from tests.backend.neff.mutants import EXAMPLES
from tests.fuzz import kind_npz
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import mutate_bytes, zip_members, zip_of
from tests.inprocess import run_cli

STEPS = {"adamw": ["--optimizer", "adamw", "--lr", "1e-2"],
         "sgd": ["--optimizer", "sgd", "--lr", "1e-2", "--mixed-precision", "bf16"]}
LOSS = ["--loss", "cross-entropy", "--loss-input", "y", "--label-input", "labels"]


def _check(outcome: object, what: str) -> None:
    if getattr(outcome, "status", 1) != 0:
        raise RuntimeError(f"fuzz seed: {what} failed: {getattr(outcome, 'stderr', '')}")


def seeds(work: Path) -> list[bytes]:
    """Compile both steps into `work`, run one step of each and keep its saved state; the
    batch is written beside (`batch.npz`)."""
    rng = np.random.default_rng(0)
    np.savez(work / "batch.npz", x=rng.normal(size=(4, 16)).astype(np.float32),
             labels=np.array([1, 2, -100, 9]))
    out = []
    for name, flags in STEPS.items():
        neff = work / f"step-{name}.neff"
        _check(run_cli("compile", str(EXAMPLES / "mlp.onnx"), "--target", "trn1",
                       "--training", *LOSS, *flags, "--output", str(neff), "--no-cache"),
               f"compile {name}")
        state = work / f"seed-{name}.npz"
        _check(run_cli("run", str(neff), "--inputs", str(work / "batch.npz"), "-q",
                       "--save-state", str(state)), f"run {name}")
        out.append(state.read_bytes())
    return out






def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _state_change(members: dict[str, bytes], data: st.DataObject) -> dict[str, bytes]:
    """A change a wrong or stale state file would have: arrays swapped, retyped, reshaped,
    a member duplicated under another name, an extra or a missing one."""
    names = sorted(members)
    name = data.draw(st.sampled_from(names))
    what = data.draw(st.sampled_from(("swap", "retype", "reshape", "extra", "drop",
                                      "scalar", "nan")))
    if what == "swap":
        other = data.draw(st.sampled_from(names))
        members[name], members[other] = members[other], members[name]
    elif what in ("retype", "reshape", "nan", "scalar"):
        arr = np.load(io.BytesIO(members[name]), allow_pickle=False)
        if what == "retype":
            with np.errstate(all="ignore"):  # NaN to int is what a bad writer does
                arr = arr.astype(data.draw(st.sampled_from(("float64", "int32", "float16",
                                                            "bool", "uint16", "int64"))))
        elif what == "reshape":
            arr = arr.reshape(-1) if arr.ndim != 1 else arr.reshape(1, -1)
        elif what == "scalar":
            arr = np.float32(0)
        elif arr.dtype.kind == "f":
            arr = np.full_like(arr, np.nan)
        members[name] = _npy(np.asarray(arr))
    elif what == "extra":
        members[data.draw(st.sampled_from(("extra.npy", "arr_0.npy", "x.npy",
                                           "../up.npy", "labels.npy")))] = members[name]
    else:
        del members[name]
    return members


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("state", "state", "npz", "bytes")), label="how")
    members = zip_members(raw)
    if how == "bytes" or not members:
        return mutate_bytes(raw, data)
    if how == "npz":
        return kind_npz.mutate(raw, data)
    try:
        return zip_of(_state_change(members, data))
    except (ValueError, OSError, EOFError):  # a member already broken: its bytes instead
        return mutate_bytes(raw, data)


def commands(path: Path, work: Path) -> list[list[str]]:
    """Resume the step the mutant seems to come from (AdamW keeps `adam_m` slots)."""
    name = "adamw" if b"adam" in path.read_bytes() else "sgd"
    return [["run", str(work / f"step-{name}.neff"), "--inputs", str(work / "batch.npz"),
             "-q", "--load-state", str(path), "--save-state", str(work / "saved.npz")]]


KIND = Kind("state", ".npz", seeds, mutate, commands)
