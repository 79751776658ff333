"""Reading an NxD Training YAML file into a flat map of key paths, checked against the key sets.

`read_tree(path)` parses the file with PyYAML's safe loader (no Python objects can be built
from it), its size, nesting and alias expansion bounded (`backend.userfiles.structured`).
`sort_keys(tree)` walks it: every key path is acted on, ignored, neutral or refused
(`config_keys`). `resolve(tree, path, value)` resolves OmegaConf's `${a.b}` references to
other keys (and the relative `${.a}` / `${..a}` forms) the way NxD's configs use them; a
resolver call such as `${multiply:...}` is refused in a key nxcc acts on (in an ignored
key it is never evaluated, so the example configs load unchanged).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.structured import load_yaml_file
from nxcc.driver.train.config_keys import (
    ACTED,
    IGNORED,
    IGNORED_SUBTREES,
    NEUTRAL,
    REFUSED_SUBTREES,
    block_paths,
    known_paths,
)
from nxcc.driver.train.errors import TrainConfigError

Tree = dict[str, object]

_REFERENCE = re.compile(r"\$\{(\.*[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")


def read_tree(path: str) -> Tree:
    """The YAML mapping in `path`; TrainConfigError naming the file for anything else (a
    file that is not regular, too large, nested too deep, a key given twice: the bounded
    reader `backend.userfiles.structured`)."""
    try:
        tree = load_yaml_file(path)
    except UserFileError as exc:
        raise TrainConfigError(exc.where, exc.what) from None
    if not isinstance(tree, dict):
        raise TrainConfigError(path, f"holds {type(tree).__name__}, not a mapping of "
                                     "NxD Training keys")
    return tree


@dataclass
class SortedKeys:
    """The leaves of a tree by what nxcc does with them: `acted` and `neutral` map key path
    to the raw value; `ignored` lists the NxD keys present that nxcc does not act on."""

    acted: dict[str, object] = field(default_factory=dict)
    neutral: dict[str, object] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def sort_keys(tree: Tree) -> SortedKeys:
    """Every key of `tree` placed in its set; TrainConfigError for a refused block or a
    mapping where a value belongs (or back), else for every key NxD does not have at once
    (each with the nearest valid name)."""
    blocks = block_paths()
    out = SortedKeys()
    unknown: list[str] = []
    for path, value in _leaves(tree, "", blocks, unknown):
        if path in ACTED:
            out.acted[path] = value
        elif path in NEUTRAL:
            out.neutral[path] = value
        else:
            out.ignored.append(path)
    if len(unknown) == 1:
        raise TrainConfigError(unknown[0], unknown_key_hint(unknown[0]))
    if unknown:
        hints = "; ".join(f"{p} ({_short_hint(p)})" for p in unknown)
        raise TrainConfigError(unknown[0], f"{len(unknown)} keys are not keys of NxD "
                                           f"Training's configuration: {hints}")
    return out


def _short_hint(path: str) -> str:
    hint = unknown_key_hint(path)
    return hint.split("; ", 1)[1] if "; " in hint else "no similar key"


def _leaves(node: Tree, prefix: str, blocks: frozenset[str], unknown: list[str]
            ) -> Iterator[tuple[str, object]]:
    for key, value in node.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str):
            raise TrainConfigError(path, "a key must be a name")
        if path in REFUSED_SUBTREES:
            raise TrainConfigError(path, REFUSED_SUBTREES[path])
        if path in IGNORED_SUBTREES or path in IGNORED:
            yield path, value
        elif path in blocks:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise TrainConfigError(path, f"expected a block of keys, got {_kind(value)}")
            yield from _leaves(value, f"{path}.", blocks, unknown)
        elif path in ACTED and ACTED[path].kind == "mapping":
            yield path, value
        elif path in ACTED or path in NEUTRAL:
            if isinstance(value, dict):
                raise TrainConfigError(path, "expected a value, got a block of keys")
            yield path, value
        else:
            unknown.append(path)


def unknown_key_hint(path: str) -> str:
    """'not a key of NxD Training's configuration' and the nearest valid key path."""
    parent, _, last = path.rpartition(".")
    known = known_paths()
    siblings = sorted({p[len(parent) + 1:].split(".")[0] for p in known
                       if p.startswith(f"{parent}.")} if parent else
                      {p.split(".")[0] for p in known})
    near = difflib.get_close_matches(last, siblings, n=1, cutoff=0.6)
    if near:
        guess = f"{parent}.{near[0]}" if parent else near[0]
    else:
        whole = difflib.get_close_matches(path, known, n=1, cutoff=0.6)
        guess = whole[0] if whole else ""
    text = "is not a key of NxD Training's configuration"
    return f"{text}; did you mean '{guess}'?" if guess else f"{text} (no similar key)"


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else f"{type(value).__name__} {value!r}"


def lookup(tree: Tree, path: str) -> tuple[bool, object]:
    """(found, raw value) of the key `path` in `tree`."""
    node: object = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def resolve(tree: Tree, path: str, value: object, seen: tuple[str, ...] = ()) -> object:
    """`value` (the raw value of key `path`) with its `${...}` references resolved."""
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = _REFERENCE.fullmatch(value)
    if whole:
        return _follow(tree, path, whole.group(1), seen)
    text = _REFERENCE.sub(lambda m: str(_follow(tree, path, m.group(1), seen)), value)
    if "${" in text:
        raise TrainConfigError(path, f"interpolation {value!r} is not supported: nxcc "
                                     "resolves only ${a.b} references to other keys")
    return text


def _follow(tree: Tree, path: str, reference: str, seen: tuple[str, ...]) -> object:
    target = _absolute(path, reference)
    if target in seen or target == path:
        cycle = " -> ".join((*seen, path, target))
        raise TrainConfigError(path, f"interpolation ${{{reference}}} refers to itself "
                                     f"({cycle})")
    found, raw = lookup(tree, target)
    if not found:
        raise TrainConfigError(path, f"interpolation ${{{reference}}} names no key "
                                     f"('{target}' is not in the file)")
    return resolve(tree, target, raw, (*seen, path))


def _absolute(path: str, reference: str) -> str:
    """The absolute key path of `reference` written in key `path` (OmegaConf's rule: one
    leading dot is the key's own block, each further dot one block up)."""
    dots = len(reference) - len(reference.lstrip("."))
    if not dots:
        return reference
    block = path.split(".")[:-1]
    up = dots - 1
    if up > len(block):
        raise TrainConfigError(path, f"interpolation ${{{reference}}} climbs above the top "
                                     "of the file")
    base = block[:len(block) - up]
    return ".".join([*base, reference[dots:]])
