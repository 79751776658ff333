"""Benchmark figures as files: what a bench/ script printed, with where and when it ran.

Every script of bench/ that measures something writes `RESULTS/NAME.md` (for people: the
command, the date, the machine, the versions, the BLAS numpy ran, then the script's output)
and `RESULTS/NAME.json` (the same facts and the script's rows, for programs). RESULTS is
`bench/results/` unless the script's `--results DIR` says otherwise. The documentation links
these files; no figure is typed into a page by hand.

    with recording("table", "nxcc against onnxruntime", opts.results) as rec:
        print(...)                 # shown on the terminal and kept for the files
        rec.data["rows"] = rows    # anything JSON-ready, for NAME.json

Nothing is written when the body raises (a failed run leaves the previous files).
`measurement_environment()` is the environment of the processes that measure for
bench/table.py and bench/gemm_floor.py: the caller's, less OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE, so that numpy's OpenBLAS picks its kernels for the CPU as it does on a
user's machine. Only those child processes run so; nxcc itself never changes them.
"""

from __future__ import annotations

import compileall
import contextlib
import datetime
import importlib.metadata
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
#: Variables that choose OpenBLAS's kernels and blocking (a build host may set them).
BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: Distributions whose versions a result records, when installed.
PACKAGES = ("numpy", "onnx", "onnxruntime", "ml-dtypes", "mpi4py", "threadpoolctl", "torch")


def add_results_argument(parser: Any) -> None:
    """`--results DIR` on an argparse parser."""
    parser.add_argument("--results", type=Path, default=RESULTS, metavar="DIR",
                        help="folder for the result files NAME.md and NAME.json "
                             "(default: bench/results/)")


def measurement_environment(keep_blas_variables: bool = False) -> dict[str, str]:
    """os.environ for a measuring child process: without BLAS_VARIABLES unless kept."""
    if keep_blas_variables:
        return dict(os.environ)
    return {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}


def byte_compile(tree: Path) -> None:
    """Compile the Python modules under `tree` to bytecode (`__pycache__`, as pip's install
    does), so that a measuring process reads bytecode even where the caller's environment
    sets PYTHONDONTWRITEBYTECODE: a load time is then the runtime's, not the time of
    compiling its source. Files that cannot be compiled are left to fail where imported."""
    compileall.compile_dir(str(tree), quiet=2, rx=re.compile(r"[/\\]\.|[/\\]build[/\\]"))


def rerun_without_blas_variables(keep: bool = False) -> None:
    """Start this script again (same interpreter and arguments, `os.execve`) without
    BLAS_VARIABLES when the caller's environment sets any, for a script that measures in
    its own process: OpenBLAS reads them once, when numpy loads it. Nothing when `keep`."""
    if keep or not any(k in os.environ for k in BLAS_VARIABLES):
        return
    sys.stdout.flush()
    env = measurement_environment()
    env[_CALLER_VARIABLES] = json.dumps({k: os.environ.get(k) for k in BLAS_VARIABLES})
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


#: how `rerun_without_blas_variables` tells the new process the caller's values
_CALLER_VARIABLES = "NXCC_BENCH_CALLER_BLAS_VARIABLES"


def _caller_blas_variables() -> dict[str, str | None]:
    """The caller's BLAS_VARIABLES (before a `rerun_without_blas_variables`)."""
    told = os.environ.get(_CALLER_VARIABLES)
    if told:
        with contextlib.suppress(ValueError, TypeError):
            found = json.loads(told)
            return {k: found.get(k) for k in BLAS_VARIABLES}
    return {k: os.environ.get(k) for k in BLAS_VARIABLES}


def blas_info() -> dict[str, Any]:
    """The BLAS numpy runs in this process: threadpoolctl's view when it is installed (the
    library, version, kernel architecture OpenBLAS chose at run time, threads), else numpy's
    build configuration (which does not name the kernel chosen at run time)."""
    import numpy as np

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        config = np.show_config(mode="dicts") or {}
        blas = dict(config.get("Build Dependencies", {}).get("blas", {}))
        return {"source": "numpy build configuration (install threadpoolctl for the kernel "
                          "chosen at run time)",
                "name": blas.get("name"), "version": blas.get("version"),
                "configuration": blas.get("openblas configuration")}
    libraries = [{k: lib.get(k) for k in ("internal_api", "version", "architecture",
                                          "num_threads", "threading_layer")}
                 for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return {"source": "threadpoolctl", "libraries": libraries}


def blas_line(blas: dict[str, Any]) -> str:
    """One line saying which BLAS and kernel ran."""
    if blas.get("source") == "threadpoolctl":
        parts = [f"{lib['internal_api']} {lib['version']}, {lib['architecture']} kernels, "
                 f"{lib['num_threads']} threads" for lib in blas.get("libraries", [])]
        return "; ".join(parts) or "no BLAS loaded"
    return (f"{blas.get('name')} {blas.get('version')} ({blas.get('configuration')}); "
            f"{blas.get('source')}")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            pairs = [ln.split(":", 1) for ln in f.read(1 << 16).splitlines() if ":" in ln]
        fields = {k.strip(): v.strip() for k, v in pairs}
    except OSError:
        return platform.processor() or "unknown CPU"
    name, family = fields.get("model name", "unknown CPU"), fields.get("cpu family")
    flags = fields.get("flags", "").split()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    return ", ".join(x for x in (name, f"family {family}" if family else "", vector) if x)


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                               "--abbrev=12"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _versions() -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from nxcc.version import COMPILER_VERSION

    found = {"nxcc": COMPILER_VERSION, "python": platform.python_version()}
    for name in PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def load_average() -> list[float] | None:
    """The machine's 1, 5 and 15-minute load averages (None where the OS has none): other
    work on the same cores moves every figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def environment(blas: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where and when: machine (with its load averages when the run ended), date (UTC),
    versions, commit, the BLAS (this process's unless given) and the BLAS variables of the
    caller's environment."""
    return {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"host": platform.node(), "cpu": _cpu(), "cpus": os.cpu_count(),
                        "memory_gib": _memory_gib(), "os": platform.platform(),
                        "load_average": load_average()},
            "versions": _versions(), "commit": _commit(),
            "blas": blas if blas is not None else blas_info(),
            "caller_blas_variables": _caller_blas_variables()}


class _Tee(io.TextIOBase):
    """Writes to a stream and keeps a copy."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.copy = stream, io.StringIO()

    def write(self, s: str) -> int:
        self.copy.write(s)
        return self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()


@dataclass
class Recording:
    """What a run leaves: `data` goes to NAME.json; `blas` replaces this process's BLAS
    (when the measuring happened in other processes); `notes` are lines for NAME.md."""

    name: str
    title: str
    folder: Path
    markdown: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    blas: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def _command() -> str:
    script = Path(sys.argv[0])
    with contextlib.suppress(ValueError):
        script = script.resolve().relative_to(REPO)
    return shlex.join(["python", str(script), *sys.argv[1:]])


def write_files(rec: Recording, output: str) -> tuple[Path, Path]:
    """NAME.md and NAME.json of a finished run whose printed output is `output`."""
    env = environment(rec.blas)
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    machine = env["machine"]
    caller = ", ".join(f"{k}={v}" if v is not None else f"{k} unset"
                       for k, v in env["caller_blas_variables"].items())
    head = [f"# {rec.title}", "",
            f"- command: `{_command()}`",
            f"- date: {env['date']}",
            f"- machine: {machine['host']}: {machine['cpus']} CPUs, {machine['cpu']}, "
            f"{machine['memory_gib']} GiB; {machine['os']}; load average "
            f"{_load_text(machine['load_average'])} (1, 5, 15 min, at the end)",
            f"- versions: {versions}; commit {env['commit'] or 'unknown'}",
            f"- BLAS: {blas_line(env['blas'])}",
            f"- caller's environment: {caller}",
            *(f"- {note}" for note in rec.notes), ""]
    body = output.rstrip("\n") if rec.markdown else f"```text\n{output.rstrip()}\n```"
    rec.folder.mkdir(parents=True, exist_ok=True)
    md, js = rec.folder / f"{rec.name}.md", rec.folder / f"{rec.name}.json"
    _replace(md, "\n".join(head) + "\n" + body + "\n")
    _replace(js, json.dumps({"name": rec.name, "title": rec.title, "command": _command(),
                             "environment": env, "notes": rec.notes,
                             "output": output.splitlines(), **rec.data}, indent=1) + "\n")
    return md, js


def _load_text(load: list[float] | None) -> str:
    return " ".join(f"{x:.2f}" for x in load) if load else "unknown"


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def recording(name: str, title: str, folder: Path, *, markdown: bool = False
              ) -> Iterator[Recording]:
    """Run the body with stdout kept; then write NAME.md and NAME.json into `folder` and say
    where on stderr. `markdown`: the output is markdown already (else it is shown as text)."""
    rec = Recording(name, title, folder, markdown)
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield rec
    md, js = write_files(rec, tee.copy.getvalue())
    print(f"results: {md} and {js.name}", file=sys.stderr)
