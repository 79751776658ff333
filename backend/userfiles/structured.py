"""JSON and YAML documents a user gives, with their size and nesting bounded.

`load_json_file(path)` / `load_json_text(raw)` refuse, as one `UserFileError` line: a file
that is not regular or holds more than MAX_DOCUMENT_BYTES; nesting deeper than MAX_DEPTH
(measured on the text before it is parsed, so a document nested 10,000 deep costs no
recursion); text that is not UTF-8 or not JSON; an object that names a key twice (which
value is meant is ambiguous).

`load_yaml_file(path)` / `load_yaml_text(text)` parse with PyYAML's safe loader (plain
data only, never Python objects) extended with the same bounds: nesting deeper than
MAX_DEPTH is refused as the parser meets it, and so is a document whose aliases expand to
more than MAX_YAML_NODES nodes (a "billion laughs" of nested anchors is a few lines of
text); a key given twice in one mapping is refused too.
"""

from __future__ import annotations

import json
from itertools import accumulate, repeat
from operator import sub
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from nxcc.backend.userfiles.regular import UserFileError, read_regular

MAX_DOCUMENT_BYTES: int = 16 << 20
"""One configuration, manifest or `config.json` file."""
MAX_DEPTH: int = 64
"""Nesting of lists and mappings in one document."""
MAX_YAML_NODES: int = 100_000
"""Nodes of one YAML document once its aliases are expanded."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # +1 and -1, offset by 1


def json_nesting(raw: bytes) -> int:
    """The deepest nesting of lists and objects in JSON text `raw`, found without parsing
    or recursion, in C-speed passes: escapes dropped, strings dropped (the quotes left
    alternate in and out), every other byte but brackets dropped, then the running sum of
    +1 per opening and -1 per closing bracket."""
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(text.split(b'"')[0::2])
    steps = outside.translate(None, _NOT_BRACKETS).translate(_STEPS)
    return max(accumulate(map(sub, steps, repeat(1))), default=0)


def load_json_text(raw: bytes, source: str) -> Any:
    """The JSON document `raw` (from `source`, named in a refusal)."""
    depth = json_nesting(raw)
    if depth > MAX_DEPTH:
        raise UserFileError(source, f"JSON nested {depth} deep, over the limit of "
                            f"{MAX_DEPTH}")
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise UserFileError(source, "is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise UserFileError(source, f"is not valid JSON ({str(exc)[:200]})") from None


def load_json_file(path: str, limit: int = MAX_DOCUMENT_BYTES) -> Any:
    """The JSON document in the regular file `path` of at most `limit` bytes."""
    return load_json_text(read_regular(path, limit, "JSON file"), path)


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the module docstring's bounds on the composed nodes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._weights: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"is nested too deep (over {MAX_DEPTH} levels)",
                           self.peek_event().start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None and id(node) not in self._weights:  # an alias: its anchor's node
            self._weights[id(node)] = 1 + sum(self._weights.get(id(c), 1)
                                              for c in _children(node))
            if self._weights[id(node)] > MAX_YAML_NODES:
                raise _Refused(f"expands to over {MAX_YAML_NODES} values (aliases of "
                               "aliases)", node.start_mark)
        return node

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen = set()
            for key_node, _ in node.value:
                key = (key_node.tag, key_node.value) if not isinstance(
                    key_node.value, list) else None
                if key is not None and key in seen:
                    raise _Refused(f"names the key {key_node.value!r} twice in one "
                                   "mapping", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)  # type: ignore[arg-type]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def load_yaml_text(text: str, source: str) -> Any:
    """The YAML document `text` (from `source`, named in a refusal)."""
    loader = None
    try:
        loader = _BoundedLoader(text)  # the reader refuses unprintable characters here
        return loader.get_single_data()
    except RecursionError:  # a structure deeper than MAX_DEPTH never reaches here
        raise UserFileError(source, "is nested too deep to be read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        if isinstance(exc, _Refused):
            raise UserFileError(source, f"{problem}{where}") from None
        raise UserFileError(source, f"is not valid YAML{where}: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_file(path: str, limit: int = MAX_DOCUMENT_BYTES) -> Any:
    """The YAML document in the regular UTF-8 file `path` of at most `limit` bytes."""
    raw = read_regular(path, limit, "configuration")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserFileError(path, "is not UTF-8 text") from None
    return load_yaml_text(text, path)
