"""Move test files so that tests/ mirrors the source tree, and rewrite the paths that name them.

    python tools/mirror_tests.py            # move what is out of place (git mv), fix references
    python tools/mirror_tests.py --dry-run  # print what it would do, change nothing
    python tools/mirror_tests.py --check    # exit 1 if anything is out of place (used by
                                            # tests/lint/test_test_tree.py)

The layout it keeps: `tests/<package path>/` holds the tests of each source package
(`tests/compiler/hlo/` for `compiler/hlo/`, `tests/nxcc/torch/` for `nxcc/torch/`), and the
suites that test no one package live in named folders of their own (`CROSS_CUTTING`).

`RULES` maps where tests were (by topic, before the tree mirrored the source) to where they
belong, decided per file by the module it tests. A rule's source is a folder (`tests/hlo/`,
every file below it, sub-folders kept), a file (`tests/api/test_flags.py`) or a glob over one
folder's names (`tests/adapters/test_torch_*.py`); the most specific rule that matches a file
wins (file, then glob, then the longest folder). A rule names one or more destinations: the
first whose source package exists is taken (so the decoder's tests follow the decoder to
`nxd/models/decoder/` once that package exists, and stay in `tests/compiler/decoder/` until
then), and a file found in a destination that was not taken moves to the one that is.

The script is idempotent: a file already in place is left alone, so it can be re-run after a
branch that still adds tests to an old folder is merged. After moving it rewrites every
`tests/<old path>` and `tests.<old module>` in the repository's code and documents to the new
one (not in the fuzz corpus, not in this file), and sorts the imports it renamed (ruff).
`__init__.py` files are never moved: each folder holding tests gets an empty one (with its
parents, so pytest's module names stay unique), and a folder left with nothing else loses it.

What it cannot do, a person does after a run: fixtures that a `conftest.py` shares with tests
that moved elsewhere, a path built from pieces (`"tests" / "x"`) or by counting parent
folders (`parents[2]`), which the rewrite cannot see (tests/paths.py says how tests name
their data; tests/lint/test_test_tree.py finds the second kind). After merging a branch,
take the other side of a conflict in an import of `tests.<old module>` and re-run: the
rewrite renames it.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Suites that test no single package, each in a folder of its own under tests/.
CROSS_CUTTING = {
    "e2e": "whole models and programs (PyTorch and onnx exports, JAX programs) compiled and "
           "run against the outputs of the framework that made them",
    "mpi": "several processes under mpiexec: runs and training jobs agree with one process, "
           "and a failing rank ends the job",
    "python_api": "nxcc.compile / load / inspect / train end to end, against what the command "
                  "line gives (the API spans driver.api and backend.runtime.api)",
    "fuzz": "mutated inputs of every kind through the command line, and the regressions",
    "docs": "every fenced block of README.md and docs/*.md, and the catalogues",
    "lint": "the repository's rules: layers, import names, error codes, ruff, this tree",
    "bench": "the bench/ scripts on tiny inputs (bench/ is no package of nxcc)",
}

#: Source packages that need no test folder of their own, and why.
EXEMPT = {
    "backend": "the layer's __init__ only (its one import name, tests/lint/test_one_import_name)",
    "compiler": "the layer's __init__ only (its one import name, tests/lint/test_one_import_name)",
    "nxd/models": "a docstring only: each model is a package of its own",
}

#: Folders inside a package's test folder that are suites, not packages.
SUB_SUITES = {
    "compiler/onnx/node_suite": "onnx's node conformance cases run through the ONNX backend",
}

#: Text files whose paths the rewrite keeps current (by suffix; and every file in .ci/).
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml"}
NOT_REWRITTEN = ("tests/fuzz/regressions/", "tools/mirror_tests.py")


@dataclass(frozen=True)
class Dest:
    """A destination folder (`tests/.../`), taken when `needs` exists in the repository (by
    default the source package the folder mirrors; nothing for a cross-cutting suite)."""

    folder: str
    needs: str | None = None

    def available(self, repo: Path) -> bool:
        if self.needs is not None:
            return (repo / self.needs).exists()
        top = self.folder.split("/")[1]
        if top in CROSS_CUTTING:
            return True
        return (repo / self.folder.removeprefix("tests/") / "__init__.py").is_file()


def _rule(source: str, *dests: str | Dest) -> tuple[str, tuple[Dest, ...]]:
    return source, tuple(d if isinstance(d, Dest) else Dest(d) for d in dests)


# Where each test went, and why (the module it tests). Folders first: a file without a rule
# of its own goes with its folder.
RULES = [
    # -- whole folders ------------------------------------------------------------------
    _rule("tests/adapters/", "tests/nxcc/"),  # `import nxcc` never imports a framework
    _rule("tests/api/", "tests/python_api/"),
    _rule("tests/decoder/", "tests/nxd/models/decoder/", "tests/compiler/decoder/"),
    _rule("tests/hlo/", "tests/compiler/hlo/"),
    _rule("tests/models/", "tests/e2e/models/"),  # ONNX exports, used by e2e, cli, fuzz, bench
    _rule("tests/neff/", "tests/backend/neff/"),
    _rule("tests/plan/", "tests/driver/plan/"),  # once driver/plan/ exists
    _rule("tests/onnx/", "tests/compiler/onnx/"),
    _rule("tests/runtime/", "tests/backend/runtime/"),
    # JAX's SPMD programs: the annotated ones are the mesh partitioner's input
    _rule("tests/spmd/", "tests/passes/mesh_partition/"),
    _rule("tests/stablehlo/", "tests/compiler/stablehlo/"),
    _rule("tests/train/", "tests/driver/train/"),
    _rule("tests/training/", "tests/driver/train/"),  # config, data, checkpoints, HF, NxD
    # -- files that test another package than their old folder's default ------------------
    _rule("tests/adapters/test_torch_*.py", "tests/nxcc/torch/"),
    _rule("tests/adapters/example_report.py", "tests/nxcc/torch/"),
    _rule("tests/adapters/test_jax_*.py", "tests/nxcc/jax/"),
    _rule("tests/api/test_flags.py", "tests/driver/api/"),  # driver.api.flags
    _rule("tests/api/test_import.py", "tests/nxcc/"),  # nxcc/__init__'s lazy names
    _rule("tests/cli/test_cache_damaged.py", "tests/driver/cache/"),
    _rule("tests/cli/test_cache_kills.py", "tests/driver/cache/"),
    _rule("tests/cli/test_compile_cache.py", "tests/driver/cache/"),
    _rule("tests/hlo/test_proto*.py", "tests/compiler/hlo/proto/"),
    _rule("tests/hlo/proto_builders.py", "tests/compiler/hlo/proto/"),
    _rule("tests/ir/test_op_coverage.py", "tests/ir/ops/"),  # every definition has its rules
    _rule("tests/ir/test_elementwise_contract.py", "tests/ir/ops/"),
    _rule("tests/onnx/test_models_numeric.py", "tests/e2e/"),
    _rule("tests/onnx/test_transformer_models.py", "tests/e2e/"),
    _rule("tests/onnx/test_light_models.py", "tests/e2e/"),
    _rule("tests/passes/test_fusion.py", "tests/passes/fusion/"),
    _rule("tests/passes/autodiff/test_rules_*.py", "tests/passes/autodiff/rules/"),
    _rule("tests/passes/autodiff/test_collective_rules.py", "tests/passes/autodiff/rules/"),
    _rule("tests/passes/sharding/test_rules.py", "tests/passes/sharding/rules/"),
    _rule("tests/passes/sharding/test_multicore.py", "tests/backend/runtime/"),  # multicore.py
    _rule("tests/runtime/test_user_arrays.py", "tests/backend/userfiles/"),
    _rule("tests/runtime/test_view_layout.py", "tests/backend/program/"),
    _rule("tests/runtime/test_slice_views.py", "tests/backend/program/"),  # memory_plan views
    _rule("tests/spmd/test_async_kinds.py", "tests/passes/"),  # latency-hiding, numerically
    _rule("tests/spmd/test_async_kinds_cli.py", "tests/mpi/"),
    _rule("tests/spmd/test_mpi_runs.py", "tests/mpi/"),
    _rule("tests/spmd/test_bindings.py", "tests/backend/runtime/"),  # collective_binding
    _rule("tests/spmd/test_output_sharding.py", "tests/backend/runtime/"),  # spmd_layout
    _rule("tests/spmd/test_hlo_spmd.py", "tests/compiler/hlo/"),
    _rule("tests/spmd/test_jax_programs.py", "tests/e2e/"),
    _rule("tests/train/test_train_processes.py", "tests/mpi/"),
    # the training step of `compile --training`: its numbers against PyTorch go where the
    # step is built (nxd.step), its command line where the command's module is
    _rule("tests/training/test_acceptance.py", "tests/nxd/step/", "tests/driver/"),
    _rule("tests/training/test_cli_training.py",
          Dest("tests/driver/train/", needs="driver/train/compile_step.py"), "tests/driver/"),
    _rule("tests/training/test_jax_step.py", "tests/e2e/"),  # JAX's own step, JAX's numbers
    _rule("tests/training/make_jax_reference.py", "tests/e2e/"),
    _rule("tests/training/data/jax_*", "tests/e2e/data/"),
    _rule("tests/training/test_random.py", "tests/ir/kernels/"),  # ir.kernels.random
    _rule("tests/training/test_runtime_state.py", "tests/backend/runtime/"),  # steps, state
    _rule("tests/nxd/test_partition.py", "tests/nxd/pipeline/"),  # nxd.pipeline.partition
]


@dataclass(frozen=True)
class Pattern:
    """One place a rule takes files from: a folder, a file or a glob, and where they go."""

    source: str
    target: str  # a folder ending in "/"

    @property
    def kind(self) -> int:
        """2 for a file, 1 for a glob, 0 for a folder: the more specific wins."""
        if self.source.endswith("/"):
            return 0
        return 1 if any(c in self.source for c in "*?[") else 2

    def apply(self, path: str) -> str | None:
        """Where `path` goes under this pattern, or None when it does not match."""
        if self.kind == 0:
            folder = self.source.rstrip("/")
            if path == folder:
                return self.target.rstrip("/")
            return self.target + path[len(self.source):] if path.startswith(self.source) else None
        head, _, name = path.rpartition("/")
        want_head, _, want_name = self.source.rpartition("/")
        if head != want_head or not fnmatch.fnmatchcase(name, want_name):
            return None
        return self.target + name


def patterns(repo: Path) -> list[Pattern]:
    """Every place the rules take files from, with the destination each one takes."""
    out = []
    for source, dests in RULES:
        taken = next((d for d in dests if d.available(repo)), None)
        if taken is None:
            continue
        name = "" if source.endswith("/") else source.rpartition("/")[2]
        out.append(Pattern(source, taken.folder))
        out.extend(Pattern(d.folder + name, taken.folder) for d in dests if d != taken)
    return out


def destination(path: str, pats: list[Pattern]) -> tuple[int, str] | None:
    """The most specific pattern's destination of `path` as (kind, path), or None."""
    best: tuple[int, int, str] | None = None
    for p in pats:
        new = p.apply(path)
        if new is not None and (best is None or (p.kind, len(p.source)) > best[:2]):
            best = (p.kind, len(p.source), new)
    if best is None or best[2] == path:
        return None
    return best[0], best[2]


def git(*args: str, repo: Path = REPO) -> str:
    """git's output; a failure ends the script with git's own message."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mirror_tests: git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def planned_moves(repo: Path, pats: list[Pattern]) -> list[tuple[str, str]]:
    """(old, new) for every tracked file under tests/ that is out of place; refuses a plan in
    which two files would land on one path or a file on one that exists."""
    moves = []
    for path in git("ls-files", "tests", repo=repo).splitlines():
        if path.endswith("/__init__.py") or not (repo / path).exists():
            continue
        found = destination(path, pats)
        if found is not None:
            moves.append((path, found[1]))
    targets = [new for _, new in moves]
    clashes = sorted({t for t in targets if targets.count(t) > 1 or (repo / t).exists()})
    if clashes:
        raise SystemExit("mirror_tests: these destinations are taken, move by hand first: "
                         + ", ".join(clashes))
    return moves


def folders_holding_tests(repo: Path) -> set[str]:
    """Folders under tests/ that hold a test module or a conftest.py."""
    return {str(p.parent.relative_to(repo)) for p in (repo / "tests").rglob("*.py")
            if (p.name.startswith("test_") or p.name == "conftest.py")
            and "__pycache__" not in p.parts}


def fix_init_files(repo: Path, dry_run: bool) -> list[str]:
    """An empty __init__.py in every folder holding tests and in its parents; none in a
    folder left with nothing else. Returns what it did, one line each."""
    done = []
    for folder in sorted(folders_holding_tests(repo)):
        parts = Path(folder).parts
        for i in range(1, len(parts) + 1):
            init = repo / Path(*parts[:i]) / "__init__.py"
            if not init.exists():
                done.append(f"add {init.relative_to(repo)}")
                if not dry_run:
                    init.write_text("")
                    git("add", str(init.relative_to(repo)), repo=repo)
    inits = [p for p in git("ls-files", "tests", repo=repo).splitlines()
             if p.endswith("/__init__.py")]
    for path in sorted(inits, key=lambda p: -p.count("/")):  # the deepest first
        folder = (repo / path).parent
        if all(_holds_nothing(p) for p in folder.iterdir() if p.name != "__init__.py"):
            if (repo / path).read_text().strip():
                raise SystemExit(f"mirror_tests: {path} is left alone in its folder but is not "
                                 "empty; move its content by hand")
            done.append(f"remove {path}")
            if not dry_run:
                git("rm", "-q", path, repo=repo)
    return done


def _holds_nothing(path: Path) -> bool:
    """A bytecode cache, or a folder holding nothing else (what a move leaves behind)."""
    if path.name == "__pycache__":
        return True
    if not path.is_dir():
        return False
    return all(_holds_nothing(p) for p in path.iterdir())


_SLASHED = re.compile(r"(?<![\w./-])tests/[\w./*-]*")
_DOTTED = re.compile(r"(?<![\w./-])tests(?:\.[A-Za-z_]\w*)+")


def _new_slashed(token: str, pats: list[Pattern]) -> str:
    core = token.rstrip("./")
    found = destination(core, pats) if core != "tests" else None
    return token if found is None else found[1] + token[len(core):]


def _new_dotted(token: str, pats: list[Pattern]) -> str:
    """`tests.a.b.name` -> its new module path; the longest module prefix a file or glob rule
    names wins (a name after the module is kept), else the folders' rules."""
    parts = token.split(".")
    best: tuple[int, int, str] | None = None
    for k in range(2, len(parts) + 1):
        for path in ("/".join(parts[:k]) + ".py", "/".join(parts[:k])):
            found = destination(path, pats)
            if found is not None and (best is None or (found[0], k) > best[:2]):
                best = (found[0], k, found[1].removesuffix(".py").replace("/", "."))
    if best is None:
        return token
    return ".".join([best[2], *parts[best[1]:]])


def rewrite_text(text: str, pats: list[Pattern]) -> str:
    text = _SLASHED.sub(lambda m: _new_slashed(m.group(0), pats), text)
    return _DOTTED.sub(lambda m: _new_dotted(m.group(0), pats), text)


def rewritten_files(repo: Path, pats: list[Pattern]) -> dict[str, str]:
    """path -> new text, for every tracked text file whose test paths change."""
    out = {}
    for path in git("ls-files", repo=repo).splitlines():
        if path.startswith(NOT_REWRITTEN) or not (repo / path).is_file():
            continue
        if Path(path).suffix not in TEXT_SUFFIXES and not path.startswith(".ci/"):
            continue
        text = (repo / path).read_text(encoding="utf-8")
        new = rewrite_text(text, pats)
        if new != text:
            out[path] = new
    return out


def remove_empty_folders(repo: Path) -> None:
    """Folders under tests/ left with nothing but compiled-bytecode caches go."""
    for folder in sorted((repo / "tests").rglob("*"), key=lambda p: -len(p.parts)):
        if not folder.is_dir() or folder.name == "__pycache__":
            continue
        if all(p.name == "__pycache__" for p in folder.iterdir()):
            for cache in folder.iterdir():
                for f in cache.iterdir():
                    f.unlink()
                cache.rmdir()
            folder.rmdir()


def run(repo: Path, dry_run: bool) -> list[str]:
    """Move, fix __init__ files, rewrite references; returns what it did (or would do)."""
    pats = patterns(repo)
    moves = planned_moves(repo, pats)
    report = [f"move {old} -> {new}" for old, new in moves]
    if not dry_run:
        for old, new in moves:
            (repo / new).parent.mkdir(parents=True, exist_ok=True)
            git("mv", old, new, repo=repo)
        remove_empty_folders(repo)
    if dry_run and moves:
        report.append("(the __init__.py files and references are fixed after the moves)")
    else:
        report += fix_init_files(repo, dry_run)
        if not dry_run:
            remove_empty_folders(repo)
    rewritten = rewritten_files(repo, pats)
    for path, text in sorted(rewritten.items()):
        report.append(f"rewrite the test paths in {path}")
        if not dry_run:
            (repo / path).write_text(text, encoding="utf-8")
    if not dry_run:
        sort_imports(repo, [p for p in rewritten if p.endswith(".py")])
    return report


def sort_imports(repo: Path, paths: list[str]) -> None:
    """Imports renamed by the rewrite sorted again as ruff sorts them (when ruff is there)."""
    if not paths:
        return
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "I001", "--fix",
                           "--quiet", *paths], cwd=repo, capture_output=True, text=True)
    if "No module named ruff" in done.stderr:
        print("mirror_tests: ruff is not installed; sort the imports of the rewritten files",
              file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 when a test is out of place or a path names an old place")
    args = parser.parse_args(argv)
    report = run(REPO, dry_run=args.dry_run or args.check)
    for line in report:
        print(line)
    if args.check and report:
        print("tests/ does not mirror the source tree: run python tools/mirror_tests.py",
              file=sys.stderr)
        return 1
    if not report:
        print("tests/ mirrors the source tree; nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
