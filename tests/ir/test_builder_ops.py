"""The Builder's per-op methods exist statically and are generated from the definitions."""

from __future__ import annotations

import inspect

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module
from nxcc.ir.dtypes import DType
from nxcc.ir.gen_builder_ops import (
    HANDWRITTEN,
    OPS_INIT,
    TARGET,
    python_name,
    render,
    render_ops_namespace,
)
from nxcc.ir.opdef import all_opdefs
from nxcc.ir.types import TensorType


def test_generated_files_are_up_to_date() -> None:
    assert TARGET.read_text() == render(), "run: python -m nxcc.ir.gen_builder_ops"
    assert OPS_INIT.read_text() == render_ops_namespace(), "run: python -m nxcc.ir.gen_builder_ops"


def test_builder_has_a_method_per_op_and_no_getattr() -> None:
    assert "__getattr__" not in vars(Builder)
    for opdef in all_opdefs():
        method = inspect.getattr_static(Builder, python_name(opdef))
        assert callable(method), opdef.name
        if opdef.name not in HANDWRITTEN:
            assert inspect.signature(method).return_annotation == "Value"


def test_methods_and_definitions_build_the_same_op() -> None:
    x = TensorType(DType.F32, (2, 3))
    m = Module("m")
    fn = Function("main", [], [], [])
    m.add_function(fn)
    b = Builder(m, fn)
    from nxcc.ir.core import Value

    v = Value(x, "x")
    a = b.and_(b.compare(v, v, direction="LT"), b.compare(v, v, direction="GT"))
    s = b.op(ops.add, [v, v])
    t = b.op("add", [v, v])
    assert [op.opcode for op in fn.body] == ["compare", "compare", "and", "add", "add"]
    assert a.type == TensorType(DType.PRED, (2, 3)) and s.type == t.type == x


def test_a_misspelt_builder_method_does_not_exist() -> None:
    m = Module("m")
    fn = Function("main", [], [], [])
    m.add_function(fn)
    b = Builder(m, fn)
    assert not hasattr(b, "erff") and not hasattr(Builder, "erff")
    assert hasattr(b, "erf") and hasattr(b, "and_") and hasattr(b, "while_")
