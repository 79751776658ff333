"""The verifier: every function's ops are well typed and every use follows its definition.

`verify_module(module)` raises `VerificationError` whose message names the failing op and
shows the IR around it, the failing line marked with ``>``.
"""

from __future__ import annotations

from nxcc.ir.attributes import Symbol
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.opdef import TypeRuleError
from nxcc.ir.printer import Printer

CONTEXT_LINES = 3


class VerificationError(ValueError):
    """The IR breaks an invariant; the message shows where."""


def verify_module(module: Module) -> None:
    """Check every function of `module`; VerificationError at the first problem."""
    if module.entry not in module.functions:
        raise VerificationError(f"module @{module.name}: entry @{module.entry} is not defined")
    for fn in module.functions.values():
        verify_function(fn, module)


def verify_function(fn: Function, module: Module) -> None:
    defined: set[int] = {id(p) for p in fn.params}
    for index, op in enumerate(fn.body):
        problem = _check_op(op, defined, module)
        if problem:
            raise VerificationError(_report(fn, index, problem))
        defined.update(id(r) for r in op.results)
    for r in fn.results:
        if id(r) not in defined:
            raise VerificationError(_report(fn, len(fn.body), f"returns {r!r}, not defined here"))
    if fn.result_names and len(fn.result_names) != len(fn.results):
        raise VerificationError(
            f"@{fn.name}: {len(fn.result_names)} result names for {len(fn.results)} results")


def _check_op(op: Op, defined: set[int], module: Module) -> str | None:
    for i, v in enumerate(op.operands):
        if not isinstance(v, Value):
            return f"operand {i} of {op.opcode} is not a value"
        if id(v) not in defined:
            return f"operand {i} of {op.opcode} ({v!r}) is used before it is defined"
    for i, r in enumerate(op.results):
        if r.owner is not op or r.index != i:
            return f"result {i} of {op.opcode} does not point back at its op"
    opdef = op.opdef
    try:
        attrs = opdef.check_attrs(op.attrs)
        inferred = opdef.infer([v.type for v in op.operands], attrs, module)
    except (TypeRuleError, KeyError) as exc:
        return str(exc.args[0]) if exc.args else str(exc)
    for attr in attrs.values():
        for sym in _symbols(attr):
            if sym.name not in module.functions:
                return f"{op.opcode} refers to @{sym.name}, which is not defined"
    got = [r.type for r in op.results]
    if got != inferred:
        return (f"{op.opcode} results are ({', '.join(map(str, got))}), its type rule says "
                f"({', '.join(map(str, inferred))})")
    return None


def _symbols(attr: object) -> list[Symbol]:
    if isinstance(attr, Symbol):
        return [attr]
    if isinstance(attr, tuple):
        return [s for a in attr for s in _symbols(a)]
    return []


def _report(fn: Function, index: int, problem: str) -> str:
    """`problem` followed by the function's text around op `index`, marked with '>'."""
    try:
        lines = Printer(elide_constants_over=8).function(fn)
    except Exception:  # the IR may be too broken to print: say what we know
        return f"@{fn.name}, op {index}: {problem}"
    target = index + 1  # line 0 is the signature
    lo, hi = max(0, target - CONTEXT_LINES), min(len(lines), target + CONTEXT_LINES + 1)
    shown = [("> " if i == target else "  ") + lines[i] for i in range(lo, hi)]
    return f"@{fn.name}, op {index}: {problem}\n" + "\n".join(shown)
