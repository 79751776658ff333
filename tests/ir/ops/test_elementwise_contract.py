"""The contract of the unary and binary elementwise families: everything about such an op
follows from its `ElementwiseDef` (kinds, numpy function, precision), so adding one touches
its definition plus one table line per frontend (docs/adding-an-op.md)."""

from __future__ import annotations

import inspect

import pytest

from nxcc.compiler.hlo import lower_elementwise as hlo
from nxcc.compiler.onnx import elementwise as onnx
from nxcc.ir.dtypes import DType
from nxcc.ir.flops import FLOPS, per_element
from nxcc.ir.kernels import KERNELS
from nxcc.ir.opdef import ElementwiseDef, OpDef, all_opdefs
from nxcc.ir.types import TensorType
from nxcc.passes.sharding.rules import RULES
from nxcc.passes.sharding.rules.elementwise import elementwise as elementwise_rule

FAMILY = [d for d in all_opdefs() if isinstance(d, ElementwiseDef)]
_DTYPE_OF_KIND = {"float": DType.F32, "signed": DType.F32, "int": DType.S32, "pred": DType.PRED}


def test_the_families_are_all_there() -> None:
    assert {d.operands for d in FAMILY} == {1, 2}
    assert len(FAMILY) >= 35


@pytest.mark.parametrize("opdef", FAMILY, ids=lambda d: d.name)
def test_kernel_rule_and_flops_derive_from_the_definition(opdef: ElementwiseDef) -> None:
    assert opdef.elementwise and opdef.fn is not None and opdef.kinds
    captured = inspect.getclosurevars(KERNELS[opdef]).nonlocals
    assert captured["fn"] is opdef.fn and captured["precise"] == opdef.precise
    assert RULES[opdef] is elementwise_rule
    assert FLOPS[opdef] is per_element


@pytest.mark.parametrize("opdef", FAMILY, ids=lambda d: d.name)
def test_type_rule_follows_the_kinds(opdef: ElementwiseDef) -> None:
    for kind in opdef.kinds.split("|"):
        t = TensorType(_DTYPE_OF_KIND[kind], (3,))
        assert opdef.infer([t] * opdef.operands, {}, None) == [t]


def test_frontend_tables_refer_to_definitions() -> None:
    defs = set(all_opdefs())
    for table in (onnx.UNARY, onnx.BINARY, hlo.UNARY, hlo.BINARY):
        for key, opdef in table.items():
            assert isinstance(opdef, OpDef) and opdef in defs, key
