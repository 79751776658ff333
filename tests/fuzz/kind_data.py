"""Training data files (`data.train_dir`'s `.npy` token ids): seeds are the corpus files of
examples/train/data (uint16) and the same ids as int32 and big-endian int64; mutants
rewrite the header or data as a hostile writer would (`npz_hazards.npy_hazard`: absurd
shapes, objects, structured types, Fortran order, short or trailing data), change the
array (another dtype, 2-D, ids past the vocabulary or negative, too few tokens for a
batch, empty), or flip the bytes. Each mutant is the one file of the data folder of a
one-step run of the ONNX language model of examples/train."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import yaml
from hypothesis import strategies as st

from tests.backend.neff.mutants import EXAMPLES
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import mutate_bytes
from tests.fuzz.npz_hazards import npy_hazard, npy_of

TRAIN = EXAMPLES / "train"
CONFIG = "lm.yaml"


def write_config(work: Path, steps: int = 1, checkpoints: bool = False) -> Path:
    """The one-rank configuration of the ONNX language model every train-based kind runs:
    its data in `work/data`, its experiment in `work/exp`."""
    tree = {
        "name": "lm", "trainer": {"devices": 1, "max_steps": steps, "log_every_n_steps": 1},
        "exp_manager": {"exp_dir": str(work / "exp"), "resume_if_exists": True,
                        "create_checkpoint_callback": checkpoints,
                        "checkpoint_callback_params": {"every_n_train_steps": 1}},
        "data": {"micro_batch_size": 2, "global_batch_size": 4, "seq_length": 32,
                 "train_dir": str(work / "data")},
        "model": {"onnx_path": str(TRAIN / "tiny_lm.onnx"), "onnx_loss_input": "logits",
                  "onnx_label_input": "labels", "optim": {"name": "adamw", "lr": 3e-3}},
    }
    path = work / CONFIG
    path.write_text(yaml.safe_dump(tree))
    return path


def seeds(work: Path) -> list[bytes]:
    write_config(work)
    ids = np.load(TRAIN / "data" / "corpus_00.npy")
    return [(TRAIN / "data" / "corpus_00.npy").read_bytes(),
            (TRAIN / "data" / "corpus_01.npy").read_bytes(),
            npy_of(ids.astype(np.int32)), npy_of(ids.astype(">i8"))]


def _array_change(raw: bytes, data: st.DataObject) -> bytes:
    ids = np.load(io.BytesIO(raw), allow_pickle=False)
    what = data.draw(st.sampled_from(("dtype", "2d", "vocab", "negative", "short", "empty")))
    if what == "dtype":
        return npy_of(ids.astype(data.draw(st.sampled_from(
            ("float32", "int8", "uint8", "bool", "int64", "complex64", ">u2", "float16")))))
    if what == "2d":
        return npy_of(ids[: ids.size // 2 * 2].reshape(2, -1))
    if what == "vocab":
        out = ids.astype(np.int64)
        out[data.draw(st.integers(0, out.size - 1))] = data.draw(st.sampled_from(
            (128, 129, 1 << 31, (1 << 63) - 1)))
        return npy_of(out)
    if what == "negative":
        out = ids.astype(np.int64)
        out[data.draw(st.integers(0, out.size - 1))] = -1
        return npy_of(out)
    if what == "short":
        return npy_of(ids[: data.draw(st.integers(1, 128))])
    return npy_of(ids[:0])


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("hazard", "hazard", "array", "bytes")), label="how")
    if how == "hazard":
        return npy_hazard(raw, data)
    if how == "array":
        try:
            return _array_change(raw, data)
        except (ValueError, OSError, EOFError):  # already unreadable: its bytes instead
            return mutate_bytes(raw, data)
    return mutate_bytes(raw, data)


def commands(path: Path, work: Path) -> list[list[str]]:
    """The mutant as the data folder's one file, then a one-step run (nothing saved)."""
    folder = work / "data"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.copyfile(path, folder / "tokens.npy")
    return [["train", str(work / CONFIG), "--quiet"]]


KIND = Kind("data", ".npy", seeds, mutate, commands)
