"""The code blocks of the documentation pages, as the doc tests see them.

The convention (written for authors in docs/contributing.md):

* a fenced block tagged `python` is run as a script; `sh` or `bash` as one bash script
  (`set -e -o pipefail`); `console` line by line: each `$ ` line is a command (a line ending
  in a backslash continues it), the lines under it are output that is checked loosely;
* any other tag (`text`, `yaml`, `json`, `diff`, ...) is shown, not run; a block without a
  tag is an error, and so is a command in a block that is not run;
* a block may be preceded by markers, HTML comments on the lines just before its fence
  (blank lines between are allowed): `<!-- skip: REASON -->` never runs it and reports it
  skipped with REASON; `<!-- needs: NAME[, NAME...] -->` runs it only when each NAME is a
  command on the tests' PATH or an importable module or attribute (`mpiexec`, `torch`,
  `nxcc.compile`), and otherwise reports it skipped naming what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO

#: Tags whose blocks are run, and how.
RUN_TAGS = {"python": "python", "sh": "sh", "bash": "sh", "console": "console"}

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>skip|needs)\s*:\s*(?P<text>.*?)\s*-->\s*$")
_COMMAND_START = re.compile(r"^(\$ |neuronx-cc |python3? |pip |mpiexec |PYTHONPATH=)")


@dataclass(frozen=True)
class Block:
    """One fenced block of `page` (a path relative to the repository), its opening fence on
    1-based line `line`; `tag` is the first word of its info string ('' when none)."""

    page: str
    line: int
    tag: str
    text: str
    skip: str | None = None
    needs: tuple[str, ...] = ()

    @property
    def kind(self) -> str | None:
        """'python', 'sh' or 'console' when the block is run, else None."""
        return RUN_TAGS.get(self.tag)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages() -> list[Path]:
    """README.md and every docs/*.md page."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _markers(lines: list[str], fence_index: int) -> tuple[str | None, tuple[str, ...]]:
    """The skip reason and needed names of the markers just above line `fence_index`."""
    skip: str | None = None
    needs: list[str] = []
    i = fence_index - 1
    while i >= 0 and (not lines[i].strip() or _MARKER.match(lines[i])):
        m = _MARKER.match(lines[i])
        if m and m["kind"] == "skip":
            skip = m["text"]
        elif m:
            needs.extend(n.strip() for n in m["text"].split(",") if n.strip())
        i -= 1
    return skip, tuple(needs)


def parse_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a markdown `text`, in order. An unclosed fence ends the page."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m["fence"], i
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        info = m["info"].strip()
        skip, needs = _markers(lines, start)
        body = "\n".join(ln[len(m["indent"]):] if ln.startswith(m["indent"]) else ln
                         for ln in lines[start + 1:j])
        blocks.append(Block(page, start + 1, info.split()[0] if info else "", body, skip,
                            needs))
        i = j + 1
    return blocks


def page_blocks(path: Path) -> list[Block]:
    return parse_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))


def looks_like_command(block: Block) -> str | None:
    """The first line of a block that is not run but looks like a command to type, or
    None."""
    if block.kind is not None:
        return None
    for line in block.text.splitlines():
        if _COMMAND_START.match(line.strip()):
            return line.strip()
    return None
