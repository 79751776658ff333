"""onnx's node conformance suite against backend.onnx_backend.

Every case listed in expected_pass.txt runs (as onnx's runner runs it, through
`onnx.backend.test.BackendTest(backend.onnx_backend, __name__)`) and must pass: the list is
the regression guard of the suite's current score. Cases of the skip groups of
`suite.SKIP_GROUPS` are reported skipped with their group's reason. The remaining cases are
known failures: they are not run here (`python -m bench.onnx_node_score` runs everything
and prints the score); once one passes, regenerate the list with
``PYTHONPATH=. python -m bench.onnx_node_score --write-expected``.
"""

from __future__ import annotations

import pytest

from tests.compiler.onnx.node_suite import suite

EXPECTED = suite.read_expected_pass()
SKIPPED = suite.skipped_cases()


@pytest.mark.parametrize("name", EXPECTED)
def test_expected_pass(name: str) -> None:
    suite.case_method(name)()


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_skip_group(name: str) -> None:
    pytest.skip(suite.SKIP_GROUPS[SKIPPED[name]])


def test_expected_list_is_consistent() -> None:
    """The list names real cases, once each, and none of a skip group."""
    known = set(suite.node_models())
    assert len(known) == suite.SUITE_SIZE
    assert len(EXPECTED) == len(set(EXPECTED))
    assert sorted(set(EXPECTED) - known) == []
    assert sorted(set(EXPECTED) & set(SKIPPED)) == []


def test_score_is_at_least_95_percent() -> None:
    """(expected passes + rule skips) / 1884 >= 95%: the issue's acceptance bar."""
    assert (len(EXPECTED) + len(SKIPPED)) / suite.SUITE_SIZE >= 0.95
