"""`neuronx-cc train CONFIG.yaml` configurations: seeds are examples/train/*.yaml (NxD
Training's Llama and Megatron GPT examples, shrunk), with the files they name copied beside
the case (data/, the Hugging Face config.json); mutants change the parsed tree (delete,
retype, replace by hostile values, nest, swap), interpolations `${...}` (to themselves, to
nowhere, nested deep), numbers, lines and indentation, add YAML's own hazards (alias bombs,
tags, deep flow nesting, duplicate keys), or flip the bytes; each goes through
`train --dry-run` (which checks the file and the data and writes nothing)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from hypothesis import strategies as st

from tests.backend.neff.mutants import EXAMPLES
from tests.fuzz.harness import Kind
from tests.fuzz.kind_hlo import _pick, _splice
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, mutate_json

TRAIN = EXAMPLES / "train"
NUMBER = re.compile(rb"(?<=: )-?\d+(?:\.\d+)?(?:e-?\d+)?\b")
INTERPOLATION = re.compile(rb"\$\{[^}\n]*\}")
KEY = re.compile(rb"^( *)([\w.]+):", re.M)
ALIAS = re.compile(rb"(?:^|[\s\[{,:])[&*][\w-]", re.M)
BOMB = (b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode()
    for i in range(8)))
HAZARDS = (
    BOMB,
    b"trainer: !!python/object/apply:os.system ['true']\n",
    b"seed: " + b"[" * 5000 + b"]" * 5000 + b"\n",
    b"model: {" + b"a: {" * 3000 + b"}" * 3001 + b"\n",
    b"trainer:\n  devices: 8\ntrainer:\n  devices: 1\n",
    b"name: ${name}\n",
    b"seed: ${" * 200 + b"seed" + b"}" * 200 + b"\n",
    b"data:\n  train_dir: /\n",
    b"data:\n  train_dir: ../../../../etc\n",
    b"model:\n  model_config: /dev/zero\n",
    b"model_source: hf\nmodel:\n  model_config: /dev/zero\n",
    b"model_source: hf\nmodel:\n  model_config: deep.json\n",
    b"model_source: hf\nmodel:\n  model_config: twice.json\n",
    b"model_source: hf\nmodel:\n  model_config: data\n",
    b"data:\n  train_dir: /dev\n",
    b"exp_manager:\n  resume_from_checkpoint: /dev/zero\n",
    b"a: &a {b: *a}\n",
    b"seed: 1\nseed: 2\n",
    b"trainer:\n  max_steps: 1e400\n",
    b"\xef\xbb\xbf\t: \x00\n",
)


def seeds(work: Path) -> list[bytes]:
    """The example configurations; what they name (data/, *.json, *.onnx) copied into `work`,
    with two hostile config.json files beside (nested 10,000 deep; a key given twice)."""
    (work / "deep.json").write_text("[" * 10_000 + "]" * 10_000)
    (work / "twice.json").write_text('{"vocab_size": 128, "vocab_size": 64}')
    for item in TRAIN.iterdir():
        target = work / item.name
        if item.is_dir() and not target.exists():
            shutil.copytree(item, target)
        elif item.suffix in (".json", ".onnx"):
            shutil.copyfile(item, target)
    return [p.read_bytes() for p in sorted(TRAIN.glob("*.yaml"))]


def _tree(raw: bytes, data: st.DataObject) -> bytes:
    if ALIAS.search(raw):  # an alias bomb expands when the mutator copies its tree
        return mutate_bytes(raw, data)
    try:
        tree = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError, ValueError):
        return mutate_bytes(raw, data)
    try:
        return yaml.safe_dump(mutate_json(tree, data), sort_keys=False).encode()
    except (yaml.YAMLError, RecursionError, TypeError, ValueError):
        return mutate_bytes(raw, data)


def _interpolation(raw: bytes, data: st.DataObject) -> bytes:
    keys = [b"name", b"seed", b"trainer.devices", b"model.optim", b".encoder_seq_length",
            b"..trainer", b"nowhere.at.all", b"multiply:1,2", b"multiply:${seed}, 1e308",
            b"data", b""]
    new = b"${" + data.draw(st.sampled_from(keys)) + b"}"
    m = _pick(INTERPOLATION, raw, data)
    if m is None or data.draw(st.booleans()):  # or a key of the file set to one
        key = _pick(KEY, raw, data)
        return raw if key is None else raw[:key.end()] + b" " + new + b"\n" + \
            raw[raw.find(b"\n", key.end()) + 1:]
    return _splice(raw, m, new)


def _lines(raw: bytes, data: st.DataObject) -> bytes:
    lines = raw.split(b"\n")
    i = data.draw(st.integers(0, len(lines) - 1))
    action = data.draw(st.sampled_from(("drop", "copy", "indent", "dedent")))
    if action == "drop":
        del lines[i]
    elif action == "copy":
        lines.insert(data.draw(st.integers(0, len(lines))), lines[i])
    elif action == "indent":
        lines[i] = b"  " * data.draw(st.integers(1, 3)) + lines[i]
    else:
        lines[i] = lines[i].lstrip()
    return b"\n".join(lines)


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("tree", "tree", "number", "interpolation", "line",
                                     "hazard", "bytes")), label="how")
    if how == "tree":
        return _tree(raw, data)
    if how == "number":
        value = data.draw(st.sampled_from(BOUNDARY_INTS + (-5, 3, 0.5, "nan", "-.inf", "1e400")))
        return _splice(raw, _pick(NUMBER, raw, data), str(value).encode())
    if how == "interpolation":
        return _interpolation(raw, data)
    if how == "line":
        return _lines(raw, data)
    if how == "hazard":
        hazard = data.draw(st.sampled_from(HAZARDS))
        return hazard if data.draw(st.booleans()) else raw + b"\n" + hazard
    return mutate_bytes(raw, data)


def commands(path: Path, work: Path) -> list[list[str]]:
    return [["train", str(path), "--dry-run", "--quiet"]]


KIND = Kind("yaml", ".yaml", seeds, mutate, commands)
