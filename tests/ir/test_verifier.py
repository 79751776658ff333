"""The verifier rejects broken IR with the failing op and the IR around it."""

from __future__ import annotations

import pytest

from nxcc.ir import Builder, DType, Function, Module, Op, TensorType, Value
from nxcc.ir.verifier import VerificationError, verify_module

F4 = TensorType(DType.F32, (4,))


def module_with(*build) -> tuple[Module, Function, Builder]:
    m = Module("v")
    x = Value(F4, "x")
    fn = m.add_function(Function("main", [x]))
    return m, fn, Builder(m, fn)


def test_use_before_definition_shows_context() -> None:
    m, fn, b = module_with()
    x = fn.params[0]
    e = b.exp(x)
    n = b.negate(e)
    fn.body.reverse()  # negate now comes before exp
    fn.results = [n]
    with pytest.raises(VerificationError) as info:
        verify_module(m)
    text = str(info.value)
    assert "@main, op 0: operand 0 of negate" in text
    assert "used before it is defined" in text
    assert ">   %1 = negate(%0) : f32[4]" in text


def test_wrong_result_type_is_named() -> None:
    m, fn, b = module_with()
    x = fn.params[0]
    op = Op("add", [x, x], [TensorType(DType.F32, (5,))])
    fn.body.append(op)
    fn.results = [op.result]
    with pytest.raises(VerificationError, match=r"add results are \(f32\[5\]\), its type rule "
                       r"says \(f32\[4\]\)"):
        verify_module(m)


def test_operand_type_mismatch() -> None:
    m, fn, b = module_with()
    x = fn.params[0]
    i = Value(TensorType(DType.S32, (4,)), "i")
    fn.params.append(i)
    fn.body.append(Op("add", [x, i], [F4]))
    fn.results = [fn.body[-1].result]
    with pytest.raises(VerificationError, match="add: operand 1 is s32\\[4\\], expected f32\\[4\\]"):
        verify_module(m)


def test_undefined_function_reference() -> None:
    m, fn, b = module_with()
    x = fn.params[0]
    z = b.constant(0.0, DType.F32)
    fn.body.append(Op("reduce", [x, z], [TensorType(DType.F32, ())],
                      {"dimensions": (0,), "computation": "nowhere"}))
    fn.results = [fn.body[-1].result]
    with pytest.raises(VerificationError, match="refers to @nowhere"):
        verify_module(m)


def test_returned_value_not_defined() -> None:
    m, fn, b = module_with()
    stray = Value(F4, "stray")
    fn.results = [stray]
    with pytest.raises(VerificationError, match="returns Value\\(stray: f32\\[4\\]\\)"):
        verify_module(m)


def test_missing_entry() -> None:
    m = Module("v", entry="nope")
    with pytest.raises(VerificationError, match="entry @nope is not defined"):
        verify_module(m)


def test_type_rules_reject_bad_builder_calls() -> None:
    m, fn, b = module_with()
    x = fn.params[0]
    from nxcc.ir import TypeRuleError

    with pytest.raises(TypeRuleError, match="cannot reshape f32\\[4\\]"):
        b.reshape(x, (3,))
    with pytest.raises(TypeRuleError, match="exp: element type s32 is not allowed"):
        b.exp(b.constant(1, DType.S32))
