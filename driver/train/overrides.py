"""Command-line overrides of a training configuration, in Hydra's grammar (NxD's launcher is
a Hydra application, so its users write them this way).

    key.path=VALUE     replace a key the file has (an error if it has none; for a key NxD
                       does not have, the error names the nearest valid key)
    +key.path=VALUE    add a key the file does not have (an error if it has one)
    ++key.path=VALUE   add or replace
    ~key.path          delete a key (an error if the file has none)
    ~key.path=VALUE    delete it only if its value is VALUE

A VALUE is read as YAML (`5`, `1e-4`, `[0.9,0.95]`, `{train: [1.0, /data/a]}`, `null`) with
the bounds of the file itself (`backend.userfiles.structured`: nesting, alias expansion, a key
given twice); an empty VALUE is the empty string, as in Hydra. The result is checked with the
file's keys afterwards, so an override of a key NxD does not have is reported like one in the
file.
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.structured import load_yaml_text
from nxcc.driver.train.config_keys import IGNORED_SUBTREES, known_paths
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.yaml_tree import unknown_key_hint

Tree = dict[str, object]


@dataclass(frozen=True)
class Override:
    """One parsed override: `op` is "set", "add", "force" or "delete"; `value` is None for a
    delete without a value (`has_value` False)."""

    op: str
    path: str
    value: object
    has_value: bool
    text: str


def parse_override(item: str) -> Override:
    """`item` as Hydra reads it; TrainConfigError for something that is not an override."""
    if item.startswith("~"):
        op, rest = "delete", item[1:]
    elif item.startswith("++"):
        op, rest = "force", item[2:]
    elif item.startswith("+"):
        op, rest = "add", item[1:]
    else:
        op, rest = "set", item
    path, sep, text = rest.partition("=")
    if not path or any(not part or not part.replace("_", "a").isalnum()
                       for part in path.split(".")):
        raise TrainConfigError(item, "an override is KEY.PATH=VALUE, +KEY.PATH=VALUE, "
                                     "++KEY.PATH=VALUE or ~KEY.PATH")
    if not sep and op != "delete":
        raise TrainConfigError(path, f"override {item!r} has no value: an override is "
                                     "KEY.PATH=VALUE")
    try:
        value = (load_yaml_text(text, "override") if text else "") if sep else None
    except UserFileError as exc:  # bounded as the file is: nesting, aliases, repeated keys
        raise TrainConfigError(path, f"override value {text[:80]!r} {exc.what}") from None
    return Override(op, path, value, bool(sep), item)


def _parent(tree: Tree, path: str, create: bool) -> tuple[Tree | None, str]:
    """The block holding the last part of `path` (None when a block on the way is missing
    and `create` is false) and that last part."""
    *parents, last = path.split(".")
    node = tree
    for i, part in enumerate(parents):
        child = node.get(part)
        if not isinstance(child, dict):
            if child is not None and part in node:
                where = ".".join(parents[:i + 1])
                raise TrainConfigError(path, f"'{where}' holds a value, not a block of keys")
            if not create:
                return None, last
            child = node[part] = {}
        node = child
    return node, last


def _nxd_key(path: str) -> bool:
    """Whether `path` is a key of NxD Training's configuration (or lies in a block whose
    keys nxcc does not check)."""
    parts = path.split(".")
    return path in known_paths() or any(".".join(parts[:i]) in IGNORED_SUBTREES
                                        for i in range(1, len(parts)))


def apply_override(tree: Tree, item: str) -> None:
    """Apply one override to `tree` (see the module docstring)."""
    o = parse_override(item)
    node, last = _parent(tree, o.path, create=o.op in ("add", "force"))
    present = node is not None and last in node
    if o.op == "set" and not present:
        if not _nxd_key(o.path):  # a misspelt key: its nearest name helps more than `+`
            raise TrainConfigError(o.path, unknown_key_hint(o.path))
        raise TrainConfigError(o.path, f"the file has no such key to override: add it with "
                                       f"+{o.path}=... (or ++{o.path}=... to add or replace)")
    if o.op == "add" and present:
        raise TrainConfigError(o.path, f"the file already has this key: replace it with "
                                       f"{o.path}=... (or ++{o.path}=...)")
    if o.op == "delete":
        if not present:
            raise TrainConfigError(o.path, "cannot delete a key the file does not have")
        assert node is not None
        if o.has_value and node[last] != o.value:
            raise TrainConfigError(o.path, f"not deleted: its value is {node[last]!r}, the "
                                           f"override expects {o.value!r}")
        del node[last]
        return
    assert node is not None
    node[last] = o.value


def apply_overrides(tree: Tree, overrides: tuple[str, ...]) -> None:
    """Apply `overrides` in order (the first bad one raises TrainConfigError)."""
    for item in overrides:
        apply_override(tree, item)
