"""The snippets of docs/adding-a-pass.md run as written: the example pass, registered, builds
from its pipeline text, round-trips, and does what its docstring says."""

from __future__ import annotations

import re
import sys
import textwrap
import types

import pytest

from nxcc.passes import registry
from tests.cli_helpers import REPO
from tests.passes.pass_check import check

DOC = REPO / "docs" / "adding-a-pass.md"


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@pytest.fixture
def strip_barriers(monkeypatch: pytest.MonkeyPatch) -> type:
    """The doc's pass class (in a module of its own, as it would be), registered for this
    test only."""
    module = types.ModuleType("strip_barriers_doc")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(_snippets()[0], str(DOC), "exec"), module.__dict__)  # noqa: S102 - the doc's code
    cls = module.StripBarriers
    monkeypatch.setitem(registry.PASSES, "strip-barriers", cls)  # type: ignore[arg-type]
    return cls  # type: ignore[return-value]


def test_the_registration_snippet_runs(strip_barriers: type) -> None:
    exec(compile(_snippets()[1], str(DOC), "exec"), {})  # noqa: S102


def test_the_example_pass_strips_barriers(strip_barriers: type) -> None:
    check("""\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = optimization_barrier(%x) : f32[4]
            %b = exp(%a) : f32[4]
            %c = optimization_barrier(%b) : f32[4]
            return %c
          }
        }
        """, ("strip-barriers",), textwrap.dedent("""\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %b = exp(%x) : f32[4]
            return %b
          }
        }
        """))
