"""No import cycle hides behind an import inside a function: every function-local import of an
`nxcc` module is one of those listed here, each with the reason it is made late.

A module that needs another imports it at its top; a cycle is broken by moving what both
need to a module of its own. The imports below are late on purpose: they keep a cheap path
(a compile-cache hit, the command line's start) from loading what it does not use, or load
a registry's modules once the definitions they register against exist.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.cli_helpers import REPO
from tests.lint.staged_tree import LAYERS

#: (file, function) -> why its import of an nxcc module is made inside it
ALLOWED: dict[tuple[str, str], str] = {
    ("cli/entry.py", "main"):
        "after the replay of a compile-cache hit, which loads no click commands or numpy",
    ("cli/list_cmd.py", "list_operators_cmd"):
        "the frontends' tables (onnx, numpy) for this command only, not at every start",
    ("driver/cached_compile.py", "_compile"):
        "the compiler on a cache miss only: a hit loads no frontend, pass or numpy",
    ("driver/frontends.py", "import_xla"):
        "the XLA frontends (numpy, lark) for an XLA model only; framework detection runs "
        "on a cache hit",
    ("driver/compile.py", "import_model"):
        "the ONNX frontend (onnx's protobuf classes) for an ONNX model only",
    ("driver/compile.py", "compile_onnx_model"):
        "the ONNX frontend, as in import_model",
    ("driver/api/compile.py", "_compile"):
        "the training modules (onnx, autodiff) for --training only",
    ("compiler/hlo/__init__.py", "parse"):
        "the lark engine, whose parser is built from the grammar, when asked for only",
    ("ir/kernels/base.py", "load_kernels"):
        "the kernel modules register against op definitions that themselves use this "
        "package's functions, so they load on the tables' first lookup",
}


def _local_imports(path: Path) -> list[tuple[str, int, str]]:
    """(innermost function, line, module) for each import of an nxcc module in a function."""
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if function is not None:
            found.extend((function, getattr(node, "lineno", 0), n) for n in names
                         if n == "nxcc" or n.startswith("nxcc."))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(), str(path)), None)
    return found


def _all_local_imports() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for folder in (*LAYERS, "nxcc"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for fn, line, module in _local_imports(path):
                out.setdefault((rel, fn), []).append(f"{rel}:{line} {module}")
    return out


def test_every_local_import_has_its_reason() -> None:
    unexplained = [where for key, places in _all_local_imports().items()
                   if key not in ALLOWED for where in places]
    assert not unexplained, ("imports of nxcc modules inside functions: move them to the top "
                             "(a cycle: move what both modules need to a module of its own), "
                             "or add them to ALLOWED with the reason:\n" + "\n".join(unexplained))


def test_every_allowed_import_exists() -> None:
    """The list stays true: an entry whose import is gone is removed."""
    stale = sorted(set(ALLOWED) - set(_all_local_imports()))
    assert not stale, stale


def test_a_new_local_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import nxcc\n\n\ndef f():\n    import json\n"
                      "    from nxcc.ir import ops\n    import nxcc.ir.core as core\n\n"
                      "    def g():\n        from nxcc import errors\n        return errors\n\n"
                      "    return ops, core, json, g\n")
    assert [(fn, module) for fn, _, module in _local_imports(module)] == [
        ("f", "nxcc.ir"), ("f", "nxcc.ir.core"), ("g", "nxcc")]
