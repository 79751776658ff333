"""The pass manager: registry names, verification after each pass, printing, timing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from nxcc.ir.core import Module, Op
from nxcc.ir.dtypes import DType
from nxcc.ir.parser import parse_module
from nxcc.ir.types import TensorType
from nxcc.passes.manager import PassFailure, PassManager
from nxcc.passes.pipeline_text import parse_pipeline
from nxcc.passes.registry import PASSES, PIPELINES

TEXT = """\
module @m {
  func @main(%x: f32[4]) -> (f32[4]) {
    %a = exp(%x) : f32[4]
    %b = exp(%x) : f32[4]
    %c = add(%a, %b) : f32[4]
    return %c
  }
}
"""


def test_every_registered_name_matches_its_pass() -> None:
    for name, cls in PASSES.items():
        assert cls.name == name
    for text in PIPELINES.values():
        assert {spec.name for spec in parse_pipeline(text)} <= set(PASSES)


@dataclass(frozen=True)
class BreakTypes:
    """A deliberately wrong pass: changes a result type."""

    name: ClassVar[str] = "break"

    def run(self, module: Module) -> bool:
        op: Op = module.entry_function.body[0]
        op.results[0].type = TensorType(DType.F32, (5,))
        return True


def test_invalid_ir_after_a_pass_names_the_pass_and_those_before() -> None:
    module = parse_module(TEXT)
    manager = PassManager([PASSES["cse"](), BreakTypes()])
    with pytest.raises(PassFailure, match=r"invalid IR after pass 'break' \(after cse\)"):
        manager.run(module)


def test_print_after_and_timings() -> None:
    module = parse_module(TEXT)
    printed: list[str] = []
    manager = PassManager([PASSES["cse"](), PASSES["dce"]()], print_after=frozenset({"cse"}),
                          emit=printed.append)
    manager.run(module)
    assert len(printed) == 1
    assert printed[0].startswith("// -----// IR after cse //----- //")
    assert "%c = add(%a, %a)" in printed[0]
    assert [t[0] for t in manager.timings] == ["cse", "dce"]
    assert manager.timings[0][2] is True


@dataclass(frozen=True)
class Reports:
    """A pass that changes nothing and reports `changed`."""

    changed: bool
    name: ClassVar[str] = "reports"

    def run(self, module: Module) -> bool:
        return self.changed


def test_a_pass_that_changed_nothing_is_not_verified_again(monkeypatch) -> None:
    from nxcc.passes import manager as manager_module

    calls: list[int] = []
    real = manager_module.verify_module
    monkeypatch.setattr(manager_module, "verify_module", lambda m: calls.append(1) or real(m))
    PassManager([Reports(False), Reports(True), Reports(False)]).run(parse_module(TEXT))
    assert len(calls) == 2  # the frontend's module, and after the pass that changed it


def test_ops_a_pass_removes_are_unlinked_from_their_results() -> None:
    module = parse_module(TEXT)
    fn = module.entry_function
    a_op, b_op, c_op = fn.body
    PassManager([PASSES["cse"]()]).run(module)
    assert [op.opcode for op in fn.body] == ["exp", "add"]
    removed = b_op if fn.body[0] is a_op else a_op
    kept = fn.body[0]
    assert all(v.owner is None for v in removed.results)  # no op <-> value cycle left
    assert all(v.owner is op for op in (kept, c_op) for v in op.results)
