"""Every code block of README.md and docs/*.md runs, as the convention of tests/docs/blocks.py
says: one test per run block, in page order, each page in a folder of its own.

A block marked `<!-- skip: REASON -->` is reported skipped with its reason; one marked
`<!-- needs: NAME -->` runs where NAME is found and is skipped naming it elsewhere.
"""

from __future__ import annotations

import pytest

from tests.docs.blocks import Block, doc_pages, page_blocks
from tests.docs.runner import RUNNERS, Workspace, make_workspace, missing_needs

BLOCKS = [b for page in doc_pages() for b in page_blocks(page) if b.kind is not None]
_WORKSPACES: dict[str, Workspace] = {}


def _workspace(page: str, factory: pytest.TempPathFactory) -> Workspace:
    if page not in _WORKSPACES:
        _WORKSPACES[page] = make_workspace(factory.mktemp("doc-" + page.replace("/", "-")))
    return _WORKSPACES[page]


def _skip_reason(block: Block, ws: Workspace) -> str | None:
    if block.skip is not None:
        return block.skip
    missing = missing_needs(block, ws.env)
    return f"needs {', '.join(missing)}" if missing else None


def _run(block: Block, ws: Workspace) -> None:
    """Run `block` in its page's workspace, recording a failure for the blocks after it."""
    try:
        RUNNERS[block.kind or ""](block, ws)
    except BaseException:
        ws.failed = block.id
        raise


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs(block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    ws = _workspace(block.page, tmp_path_factory)
    page = [b for b in BLOCKS if b.page == block.page]
    here = page.index(block)
    # the blocks before this one, when this test runs alone (pytest -k)
    for earlier in page[ws.ran:here]:
        if ws.failed is None and _skip_reason(earlier, ws) is None:
            _run(earlier, ws)
    ws.ran = max(ws.ran, here + 1)
    if ws.failed is not None:
        pytest.fail(f"an earlier block of {block.page} failed ({ws.failed}); this one "
                    "may depend on it")
    reason = _skip_reason(block, ws)
    if reason is not None:
        pytest.skip(reason)
    _run(block, ws)
