"""The documentation's form: a short README, pages for users (no history, no issue numbers,
no session talk), every block tagged, every command in a block that runs, every relative
link resolving, every page reachable from the guide's index."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.blocks import REPO, doc_pages, looks_like_command, page_blocks

PAGES = doc_pages()
IDS = [str(p.relative_to(REPO)) for p in PAGES]

#: What `grep -rniE "issue [0-9]+|this session|last session" README.md docs/` must not find.
HISTORY = re.compile(r"issue [0-9]+|this session|last session", re.IGNORECASE)
#: A clock time (23:07) or a date (2026-11-26) in prose: figures and their dates live in
#: the files bench/ writes.
CLOCK = re.compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d\b(?!:)|\b20\d\d-[01]\d-[0-3]\d\b")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: Guide pages other branches are writing, linked from the index before they land (a link
#: to one is not broken while it is missing). Remove a name once its page is merged.
PAGES_BEING_WRITTEN = {"python-api.md", "error-codes.md", "pytorch-and-jax.md",
                       "hostile-input.md"}


def _prose(path: Path) -> str:
    """The page without its fenced blocks (their lines blanked, so line numbers hold)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for block in page_blocks(path):
        for i in range(block.line - 1, block.line + block.text.count("\n") + 1):
            if i < len(lines):
                lines[i] = ""
    return "\n".join(lines)


def test_readme_is_at_most_250_lines() -> None:
    n = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines; move detail to a docs/ page"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_no_history_or_session_talk(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [f"{i}: {ln}" for i, ln in enumerate(text.splitlines(), 1) if HISTORY.search(ln)]
    assert not found, "history belongs in commit messages:\n" + "\n".join(found)


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_no_clock_times_or_dates_in_prose(path: Path) -> None:
    found = [f"{i}: {ln}" for i, ln in enumerate(_prose(path).splitlines(), 1)
             if CLOCK.search(ln)]
    assert not found, ("a time or date in the prose; measured figures come from bench/ "
                       "scripts as files:\n" + "\n".join(found))


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_block_is_tagged_and_every_command_runs(path: Path) -> None:
    problems = []
    for block in page_blocks(path):
        if not block.tag:
            problems.append(f"{block.id}: a block without a tag (python, console, sh run; "
                            "text, yaml... are shown)")
        command = looks_like_command(block)
        if command:
            problems.append(f"{block.id}: a command in a '{block.tag}' block is never run: "
                            f"{command!r} (tag it console or sh; mark it skip with a reason "
                            "if it cannot run in the tests)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(path)):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        pending = Path(file).name in PAGES_BEING_WRITTEN and Path(file).parent.name in (
            "docs", "")
        if file and not pending and not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"links to nothing: {broken}"


def test_the_index_links_every_page() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    linked = {t.split("#", 1)[0] for t in _LINK.findall(index)}
    missing = [p.name for p in sorted((REPO / "docs").glob("*.md"))
               if p.name != "index.md" and p.name not in linked]
    assert not missing, f"docs/index.md does not link {missing}"
