"""Code asks which op an op is by its definition (``op.opdef is ops.add``), never by its
text name: opcode strings are for printing and parsing.

The check reads the source of every layer and refuses a comparison (``==``, ``!=``, ``in``,
``not in``) of an op's text name with a string literal, a definition's name
(``ops.add.name``) or a literal collection of them. An
op's text name is an expression named ``opcode`` (``opcode``, ``op.opcode``,
``step.opcode``, ``done_opcode``, ``ctx.binary_opcode(...)``) or ``opdef.name``. The frontends
compare their own instruction names (HLO's ``instr.opcode``, which are not IR ops), so in
`compiler/` only the IR ops they reach through a value's owner (``v.owner.opcode``) count.
The IR text printer and parser are exempt (they turn names into definitions and back);
elsewhere a name that comes from outside (a NEFF program, the communicator's protocol) is
looked up once (`get_opdef`) and the definition compared.
"""

from __future__ import annotations

import ast

from tests.cli_helpers import REPO

LAYERS = ("ir", "passes", "nxd", "backend", "driver", "cli", "compiler", "nxcc")
#: the text form's own modules: they turn names into definitions and back
TEXT_FORM = {"ir/parser.py", "ir/printer.py"}


def _name_of(node: ast.expr) -> str | None:
    """The identifier an expression ends in: `x`, `a.x`, `f(...)` -> 'x', 'x', 'f'."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _is_opcode(node: ast.expr, frontend: bool) -> bool:
    """Whether `node` stands for an IR op's text name."""
    if frontend:  # only an IR op reached through a value: v.owner.opcode
        return (isinstance(node, ast.Attribute) and node.attr == "opcode"
                and _name_of(node.value) == "owner")
    name = _name_of(node)
    if name is not None and (name == "opcode" or name.endswith("_opcode")):
        return True
    return (isinstance(node, ast.Attribute) and node.attr == "name"
            and _name_of(node.value) in ("opdef", "opcode"))


def _is_literal(node: ast.expr) -> bool:
    """A string literal or a definition's name (``ops.add.name``), or a tuple/list/set (or
    frozenset(...)) of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if (isinstance(node, ast.Attribute) and node.attr == "name"
            and isinstance(node.value, ast.Attribute) and _name_of(node.value.value) == "ops"):
        return True
    if isinstance(node, ast.Call) and _name_of(node) in ("frozenset", "set") and node.args:
        return _is_literal(node.args[0])
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_literal(e) for e in node.elts)
    return False


def opcode_string_comparisons(source: str, frontend: bool) -> list[tuple[int, str]]:
    """(line, code) of each comparison of an op's name with string literals in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for (a, b), cmp in zip(zip(sides, sides[1:], strict=False), node.ops, strict=True):
            if not isinstance(cmp, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
                continue
            if (_is_opcode(a, frontend) and _is_literal(b)) or (
                    _is_opcode(b, frontend) and _is_literal(a)):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_opcode_string_comparisons() -> None:
    found = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            if rel not in TEXT_FORM:
                found += [f"{rel}:{line}: {code}" for line, code in opcode_string_comparisons(
                    path.read_text(encoding="utf-8"), rel.startswith("compiler/"))]
    assert not found, ("compare op definitions (op.opdef is ops.x), not their names:\n"
                       + "\n".join(found))


def test_the_check_finds_each_form() -> None:
    """The forms the check knows, each found; an identity test is not, nor in a frontend
    its own instruction name."""
    source = ('a = op.opcode == "add"\n'
              'b = opcode in ("maximum", "minimum")\n'
              'c = "constant" != v.owner.opcode\n'
              'd = ctx.binary_opcode(f) != "compare"\n'
              'e = opdef.name == "dot_general"\n'
              'f = op.opdef is ops.add\n'
              'g = instr.opcode == "parameter"\n'
              'h = v.owner.opcode != ops.transpose.name\n'
              'i = op.opcode in (ops.dot_general.name, ops.transpose.name)\n')
    assert [code for _, code in opcode_string_comparisons(source, False)] == [
        "op.opcode == 'add'", "opcode in ('maximum', 'minimum')",
        "'constant' != v.owner.opcode", "ctx.binary_opcode(f) != 'compare'",
        "opdef.name == 'dot_general'", "instr.opcode == 'parameter'",
        "v.owner.opcode != ops.transpose.name",
        "op.opcode in (ops.dot_general.name, ops.transpose.name)"]
    assert opcode_string_comparisons(source, True) == [
        (3, "'constant' != v.owner.opcode"), (8, "v.owner.opcode != ops.transpose.name")]
