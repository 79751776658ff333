"""Text tests of passes: IR in, passes run, IR out compared line by line."""

from __future__ import annotations

import textwrap

from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import PASSES


def run_passes(text: str, *names: str) -> str:
    """Parse `text`, run the named passes (verifying after each), print the result."""
    module = parse_module(textwrap.dedent(text))
    PassManager([PASSES[n]() for n in names]).run(module)
    verify_module(module)
    return print_module(module)


def check(text: str, names: tuple[str, ...], expected: str) -> None:
    got = run_passes(text, *names)
    assert got == textwrap.dedent(expected), f"got:\n{got}"
