"""tests/ mirrors the source tree: every source package has a test folder (`tests/<package
path>/`), every test folder is a source package's or a named cross-cutting suite's, test
folders are packages (so pytest's module names stay unique), no test finds its data by
counting parent folders, and tools/mirror_tests.py has nothing left to move.

The suites, the exempt packages and the reasons live in tools/mirror_tests.py, beside the
map it moves tests by."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from tests.paths import REPO


def mirror_tests() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mirror_tests", REPO / "tools/mirror_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mirror_tests", module)
    spec.loader.exec_module(module)
    return module


TOOL = mirror_tests()


def layers() -> list[str]:
    """The layer folders setup.py maps into the package, and nxcc itself."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "LAYERS"):
            return [*ast.literal_eval(node.value), "nxcc"]
    raise AssertionError("setup.py has no LAYERS")


def source_packages() -> list[str]:
    """Every package of the source, as its path from the repository root."""
    found = []
    for layer in layers():
        for init in sorted((REPO / layer).rglob("__init__.py")):
            if "__pycache__" not in init.parts:
                found.append(init.parent.relative_to(REPO).as_posix())
    return found


def folders_holding_tests() -> list[str]:
    """Folders under tests/ (as paths below it) holding a package or a test module."""
    found = set()
    for path in (REPO / "tests").rglob("*.py"):
        if "__pycache__" in path.parts or path.parent == REPO / "tests":
            continue
        if path.name == "__init__.py" or path.name.startswith("test_"):
            found.add(path.parent.relative_to(REPO / "tests").as_posix())
    return sorted(found)


def test_the_layers_are_found() -> None:
    packages = source_packages()
    for sure in ("ir", "ir/kernels", "compiler/hlo", "backend/program", "driver/train",
                 "nxcc/torch"):
        assert sure in packages


def test_every_source_package_has_a_test_folder() -> None:
    missing = [p for p in source_packages() if p not in TOOL.EXEMPT
               and not any((REPO / "tests" / p).glob("test_*.py"))]
    assert missing == [], f"packages without tests/<package>/test_*.py: {missing}"


def test_the_exempt_packages_hold_no_module() -> None:
    for package, why in TOOL.EXEMPT.items():
        assert why
        folder = REPO / package
        if folder.is_dir():
            modules = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
            assert modules == [], f"{package} is exempt as holding no module, but has {modules}"


def test_every_test_folder_mirrors_a_package_or_is_a_named_suite() -> None:
    packages = set(source_packages())
    stray = [f for f in folders_holding_tests()
             if f.split("/")[0] not in TOOL.CROSS_CUTTING and f not in TOOL.SUB_SUITES
             and f not in packages]
    assert stray == [], (f"test folders that are no source package and no suite of "
                         f"tools/mirror_tests.py's CROSS_CUTTING or SUB_SUITES: {stray}")


def test_test_folders_are_packages() -> None:
    """pytest names a test module by its package path: without __init__.py, two test files
    of one name in two folders would clash."""
    missing = []
    for folder in folders_holding_tests():
        parts = folder.split("/")
        for i in range(1, len(parts) + 1):
            init = REPO / "tests" / "/".join(parts[:i]) / "__init__.py"
            if not init.is_file():
                missing.append(init.relative_to(REPO).as_posix())
    assert sorted(set(missing)) == []


COUNTED = re.compile(r"\bparents\[|\.parent\.parent\b")


def test_no_test_finds_the_repository_by_counting_parent_folders() -> None:
    """A test moved to another depth would read the wrong folder: tests.paths.REPO it is."""
    allowed = {REPO / "tests/paths.py", Path(__file__).resolve()}
    found = [f"{p.relative_to(REPO)}:{i}" for p in sorted((REPO / "tests").rglob("*.py"))
             if p not in allowed and "__pycache__" not in p.parts
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if COUNTED.search(line)]
    assert found == [], f"name the repository as tests.paths.REPO: {found}"


def test_nothing_is_left_to_move() -> None:
    pending = TOOL.run(REPO, dry_run=True)
    assert pending == [], "run python tools/mirror_tests.py:\n" + "\n".join(pending)
