"""Writing variants of the shipped NxD example configs for the `neuronx-cc train` tests."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.paths import REPO

EXAMPLES = REPO / "examples" / "train"
LLAMA = EXAMPLES / "hf_llama_tiny_gqa.yaml"
GPT = EXAMPLES / "megatron_gpt_tiny.yaml"
DATA = EXAMPLES / "data"

DELETE = object()


def load(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def set_key(tree: dict, path: str, value: object) -> None:
    """Set (or with DELETE remove) the key `a.b.c` of `tree`, creating blocks on the way."""
    *parents, last = path.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
    if value is DELETE:
        node.pop(last, None)
    else:
        node[last] = value


def variant(tmp: Path, base: Path = LLAMA, filename: str = "config.yaml",
            **changes: object) -> Path:
    """A copy of example `base` in `tmp` with absolute input paths, `exp_dir` under `tmp`
    and `changes` applied (keys written with `__` for dots: trainer__devices=4)."""
    tree = load(base)
    tree["data"]["train_dir"] = str(DATA)
    if "model_config" in tree["model"]:
        tree["model"]["model_config"] = str(EXAMPLES / tree["model"]["model_config"])
    tree["exp_manager"]["exp_dir"] = str(tmp / "exp")
    for key, value in changes.items():
        set_key(tree, key.replace("__", "."), value)
    out = tmp / filename
    out.write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return out
