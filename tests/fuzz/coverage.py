"""Coverage-guided fuzzing with atheris (libFuzzer for Python), for any input kind:

    python -m tests.fuzz.coverage --kind neff -atheris_runs=10000 [libFuzzer flags...]

The nxcc package is imported instrumented; libFuzzer mutates the bytes of the kind's seed
corpus (written to a fresh corpus directory), keeping inputs that reach new code, and each
input runs the kind's commands in-process. A crash, a traceback or an uncoded error
(`harness.verdict`) raises, so libFuzzer stops and saves the input (``crash-<sha1>``).
Time and memory are libFuzzer's: ``-timeout=20 -rss_limit_mb=2048`` by default. atheris is
optional (`pip install '.[fuzz]'`): the hypothesis campaign (`python -m tests.fuzz`) needs
nothing beyond the test extra.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["nxcc"]):
    import nxcc.cli.main  # noqa: F401  (instrumented before the harness imports it)

from tests.fuzz.harness import FAILING, verdict  # noqa: E402
from tests.fuzz.kinds import KINDS  # noqa: E402
from tests.inprocess import run_cli  # noqa: E402


class FuzzFailure(Exception):
    """An input the toolchain did not end cleanly on."""


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.coverage")
    parser.add_argument("--kind", choices=sorted(KINDS), default="neff")
    args, flags = parser.parse_known_args(argv[1:])
    kind = KINDS[args.kind]
    work = Path(tempfile.mkdtemp(prefix=f"nxcc-atheris-{kind.name}-"))
    os.environ["NXCC_RUNTIME_DIR"] = str(work / "runtime")
    os.environ["NEURON_COMPILE_CACHE_URL"] = str(work / "compile-cache")
    os.environ.setdefault("NEURON_RT_EXEC_TIMEOUT", "5")
    corpus = work / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(kind.seeds(work)):
        (corpus / f"seed{i}{kind.suffix}").write_bytes(seed)
    path = work / f"case{kind.suffix}"
    os.chdir(work)

    def one(data: bytes) -> None:
        path.write_bytes(data)
        for command in kind.commands(path, work):
            status, reason = verdict(run_cli(*command))
            if status in FAILING:
                raise FuzzFailure(f"{command[0]}: {status}: {reason}")
        wrong = kind.check(work) if kind.check is not None else None
        if wrong is not None:
            raise FuzzFailure(f"wrong: {wrong}")

    defaults = [f for f in ("-timeout=20", "-rss_limit_mb=2048")
                if not any(x.startswith(f.split("=")[0] + "=") for x in flags)]
    atheris.Setup([argv[0], *defaults, *flags, str(corpus)], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
