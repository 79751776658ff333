"""Running the documentation's blocks as a reader would, page by page.

Each page gets a folder of its own (its working directory): a copy of `examples/` and a
link to every other top-level entry of the repository, so `examples/mlp.onnx`,
`tests/...` and `bench/...` resolve and what a block writes stays in the folder. The blocks of
a page run in order in that folder, so a later block may use what an earlier one wrote.
`neuronx-cc` is this checkout (`python -m nxcc`), `python` the interpreter running the
tests; the compile cache and the runtime's lock directory are the page's own.

Install steps are not run: in a command, the parts `python3 -m venv ...`,
`. .venv/bin/activate` and `pip install ...` joined by `&&` are dropped, since the tests
already run against the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.blocks import REPO, Block

TIMEOUT_S = 600
_INSTALL_STEP = re.compile(r"^(python3? -m venv\b|\. \.venv/bin/activate$|source \.venv/bin/"
                           r"activate$|pip install\b)")


def drop_install_steps(command: str) -> str:
    """`command` without its install steps (see the module's docstring); '' if nothing is
    left."""
    parts = [p.strip() for p in command.split("&&")]
    return " && ".join(p for p in parts if not _INSTALL_STEP.match(p))


@dataclass
class Workspace:
    """The folder, environment and progress of one page's run."""

    root: Path
    env: dict[str, str]
    ran: int = 0                      # blocks of the page handled so far
    failed: str | None = None         # id of a block that failed
    notes: list[str] = field(default_factory=list)


def make_workspace(root: Path) -> Workspace:
    """A page's folder: examples/ copied, the other top-level entries linked; a bin/ with
    `neuronx-cc` and `python` first on PATH."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.name == "examples":
            shutil.copytree(entry, root / entry.name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / entry.name).symlink_to(entry)
    tools = root / ".bin"
    tools.mkdir()
    # scripts, not links: a virtual environment's interpreter finds its packages by the
    # path it is started from
    for name, command in (("neuronx-cc", "-m nxcc "), ("python", ""), ("python3", "")):
        launcher = tools / name
        launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" {command}"$@"\n')
        launcher.chmod(0o755)
    env = {**os.environ,
           "PATH": os.pathsep.join([str(tools), str(Path(sys.executable).parent),
                                    os.environ.get("PATH", "")]),
           "PYTHONPATH": str(REPO),
           "NEURON_COMPILE_CACHE_URL": str(root / ".cache"),
           "NXCC_RUNTIME_DIR": str(root / ".runtime")}
    return Workspace(root, env)


def missing_needs(block: Block, env: dict[str, str]) -> list[str]:
    """The names of `block.needs` that are neither a command on `env`'s PATH nor an
    importable module or module attribute."""
    return [name for name in block.needs
            if shutil.which(name, path=env["PATH"]) is None and not _importable(name)]


def _importable(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except (ImportError, ValueError):
            continue
        if cut == len(parts):
            return True
        obj: object = importlib.import_module(module)
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _shell(script: str, ws: Workspace) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=ws.root,
                          env=ws.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=TIMEOUT_S)


def _report(what: str, done: subprocess.CompletedProcess[str]) -> str:
    return f"{what} ended with status {done.returncode}; its output:\n{done.stdout[-4000:]}"


def run_python(block: Block, ws: Workspace) -> None:
    script = ws.root / f".block_{block.line}.py"
    script.write_text(block.text + "\n")
    done = subprocess.run([sys.executable, script.name], cwd=ws.root, env=ws.env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, _report(f"the Python block at {block.id}", done)


def run_sh(block: Block, ws: Workspace) -> None:
    lines = [drop_install_steps(ln) for ln in _joined(block.text.splitlines())]
    done = _shell("\n".join(lines), ws)
    assert done.returncode == 0, _report(f"the shell block at {block.id}", done)


def _joined(lines: list[str]) -> list[str]:
    """Lines with backslash continuations joined."""
    out: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
        else:
            out.append(pending + line)
            pending = ""
    if pending:
        out.append(pending)
    return out


@dataclass(frozen=True)
class Session:
    """One `$ ` command of a console block and the output shown under it."""

    command: str
    shown: tuple[str, ...]


def console_sessions(text: str) -> list[Session]:
    """The commands of a console block with the output lines shown under each."""
    sessions: list[Session] = []
    command: list[str] | None = None
    shown: list[str] = []
    continued = False
    for line in text.splitlines():
        if continued and command is not None:
            command.append(line)
        elif line.startswith("$ "):
            if command is not None:
                sessions.append(Session(" ".join(_joined(command)), tuple(shown)))
            command, shown = [line[2:]], []
        elif command is not None:
            shown.append(line)
        continued = line.rstrip().endswith("\\")
    if command is not None:
        sessions.append(Session(" ".join(_joined(command)), tuple(shown)))
    return sessions


def _pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a pattern: its text, where `...` stands for any text."""
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def check_shown(shown: tuple[str, ...], output: str) -> str | None:
    """Loose check of shown output: every shown line, but blank ones and `...`, occurs in a
    line of `output`, in the order shown, `...` inside a line standing for any text. The
    first line not found, or None."""
    actual = output.splitlines()
    at = 0
    for want in (s.strip() for s in shown):
        if not want or want == "...":
            continue
        pattern = _pattern(want)
        while at < len(actual) and not pattern.search(actual[at]):
            at += 1
        if at == len(actual):
            return want
        at += 1
    return None


def run_console(block: Block, ws: Workspace) -> None:
    for session in console_sessions(block.text):
        command = drop_install_steps(session.command)
        if not command:
            continue
        done = _shell(command, ws)
        fails = any(s.strip().startswith("ERROR:") for s in session.shown)
        what = f"`$ {session.command}` ({block.id})"
        if fails:
            assert done.returncode != 0, f"{what} was shown failing, but it succeeded"
        else:
            assert done.returncode == 0, _report(what, done)
        missing = check_shown(session.shown, done.stdout)
        assert missing is None, (f"{what}: the shown line {missing!r} is not in its "
                                 f"output:\n{done.stdout[-4000:]}")


RUNNERS = {"python": run_python, "sh": run_sh, "console": run_console}
