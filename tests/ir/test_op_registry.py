"""The per-op tables are keyed by op definitions: registering twice, or by a string, fails;
lookups accept the definition or its text name; a misspelt op fails at attribute access."""

from __future__ import annotations

import pytest

from nxcc.ir import ops
from nxcc.ir.opdef import OP_DEFS, all_opdefs
from nxcc.ir.registry import OpTable, Registry


def test_every_definition_is_a_constant_of_the_ops_namespace() -> None:
    for opdef in all_opdefs():
        name = opdef.name + "_" if opdef.name in ("and", "or", "not", "while") else opdef.name
        assert getattr(ops, name) is opdef
        assert OP_DEFS[opdef.name] is opdef
    assert sorted(ops.__all__) == sorted(
        d.name + "_" if d.name in ("and", "or", "not", "while") else d.name for d in all_opdefs())


def test_a_misspelt_op_fails_at_attribute_access() -> None:
    with pytest.raises(AttributeError):
        ops.erff  # noqa: B018


def test_op_table_refuses_double_and_string_registration() -> None:
    table: OpTable[int] = OpTable("thing")
    table.register(ops.erf, ops.tan)(1)
    with pytest.raises(ValueError, match="thing for erf registered twice"):
        table.add(ops.erf, 2)
    with pytest.raises(TypeError, match="against an op definition"):
        table.add("exp", 3)  # type: ignore[arg-type]
    assert table["erf"] == 1 and table[ops.tan] == 1
    assert "exp" not in table and ops.exp not in table
    with pytest.raises(KeyError, match="no thing for 'exp'"):
        table[ops.exp]


def test_registry_loads_once_before_the_first_lookup() -> None:
    calls = []
    table: Registry[str, int] = Registry("entry", load=lambda: calls.append(table.add("a", 1)))
    assert calls == []
    assert table["a"] == 1 and list(table) == ["a"] and len(calls) == 1
