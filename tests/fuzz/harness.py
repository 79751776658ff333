"""The fuzz harness: input kinds, running one case through the CLI in this process with a
time limit, and a hypothesis-driven campaign that counts outcomes.

An input kind (`Kind`) says how to make its seed corpus, how to mutate one input (drawing
every choice from hypothesis) and which `neuronx-cc` commands to run on a mutant. Adding a
kind is one entry in `tests.fuzz.kinds.KINDS`.

A case passes when every command either succeeds or ends in one `ERROR: [CODE] ...` line
(a located error may add its source line and caret) with a non-zero status. It fails as:

- ``crash``: an exception escaped the command, or stderr holds a traceback or an error line
  without a code;
- ``hang``: a command ran past the per-case time limit (SIGALRM, raised as a BaseException
  so no ``except Exception`` in the code under test can swallow it);
- ``memory``: a MemoryError (the long run caps the address space, see `__main__`);
- ``wrong``: every command ended cleanly but the kind's own `check` found a wrong result
  (e.g. a compile cache handing out a NEFF that is not the module's).

One error line without a code (``ERROR: x.neff takes inputs ...``) is counted as
``uncoded`` and listed, not failed: it is clean, and codes for every `run` error are
another issue's work.

Each failing input is saved under the run's failure directory, to become a regression case
in `tests/fuzz/regressions/<kind>/`.
"""

from __future__ import annotations

import hashlib
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz.mutations import mutate_bytes
from tests.inprocess import Outcome, run_cli

Mutator = Callable[[bytes, st.DataObject], bytes]
Commands = Callable[[Path, Path], list[list[str]]]


@dataclass(frozen=True)
class Kind:
    """One input kind: its file suffix, seed corpus, mutator, the commands a mutant goes
    through (`commands(input_path, work_dir)`), and optionally a `check(work_dir)` run after
    them that returns why the result is wrong (None: right). `short_share` scales the
    number of cases the CI's short campaign gives it (a kind whose case runs a training
    step and saves a checkpoint costs several cases of the others)."""

    name: str
    suffix: str
    seeds: Callable[[Path], list[bytes]]
    mutate: Mutator
    commands: Commands
    check: Callable[[Path], str | None] | None = None
    short_share: float = 1.0

    def short_cases(self, cases: int) -> int:
        """Cases of this kind in a short campaign of `cases` per kind."""
        return max(1, round(cases * self.short_share))


class CaseTimeout(BaseException):
    """The per-case time limit passed (a BaseException: nothing under test catches it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in this (main) thread after `seconds`."""
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


CODED = re.compile(r"ERROR: (\[[A-Z][A-Z0-9_]+\]|NRT_[A-Z_]+ \(\d+\):) ")
"""An error line with a code: `[NCC_EFRM001]`, `[NRT_ENEFF002]`, or libnrt's status
(`NRT_EXEC_BAD_INPUT (1002):`) as `run` prints it today."""


def verdict(outcome: Outcome) -> tuple[str, str | None]:
    """("ok" | "refused" | "uncoded" | "crash" | "memory", why) for one command. "uncoded"
    (one error line, but no code) is counted and reported, not failed."""
    if isinstance(outcome.crash, MemoryError):
        return "memory", f"{outcome.crash!r}"
    if outcome.crash is not None:
        return "crash", f"{type(outcome.crash).__name__}: {outcome.crash}"[:300]
    if "Traceback" in outcome.stderr:
        return "crash", "traceback on stderr"
    if outcome.status == 0:
        return "ok", None
    lines = outcome.error_lines
    if len(lines) != 1:
        return "crash", f"not one error line: {outcome.stderr.strip()[:200]!r}"
    if not CODED.match(lines[0]):
        return "uncoded", lines[0][:200]
    return "refused", lines[0][:200]


@dataclass
class Report:
    """What a campaign saw: outcome counts, failures (reason -> saved file), time."""

    kind: str
    cases: int = 0
    counts: Counter = field(default_factory=Counter)
    failures: dict[str, Path] = field(default_factory=dict)
    uncoded: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    slowest: float = 0.0

    def line(self) -> str:
        c = self.counts
        return (f"{self.kind}: {self.cases} cases in {self.seconds:.1f} s (slowest "
                f"{self.slowest:.2f} s): {c['ok']} ran, {c['refused']} refused cleanly, "
                f"{c['uncoded']} refused without a code, {c['crash']} crashes, {c['hang']} hangs, "
                f"{c['memory']} over memory, {c['wrong']} wrong results")


FAILING = ("crash", "hang", "memory", "wrong")


def _refusal(line: str) -> str:
    """An error line's code and first words (what a long run lists, most common first)."""
    return " ".join(line.split()[:6])[:90]


def run_case(kind: Kind, data: bytes, work: Path, limit: float) -> tuple[str, str | None]:
    """Run every command of `kind` on input `data`: its worst status ("ok", "refused",
    "uncoded", or a FAILING one) and why."""
    path = work / f"case{kind.suffix}"
    path.write_bytes(data)
    worst, note = "ok", None
    for argv in kind.commands(path, work):
        try:
            with time_limit(limit):
                outcome = run_cli(*argv)
        except CaseTimeout as exc:
            return "hang", f"hang: {' '.join(argv[:1])} {exc}"
        except MemoryError as exc:
            return "memory", f"memory: {exc!r}"
        if outcome.status == 130:  # Ctrl-C or SIGTERM to the fuzzer, caught by the CLI
            raise KeyboardInterrupt(outcome.stderr.strip())
        status, reason = verdict(outcome)
        if status in FAILING:
            return status, f"{argv[0]}: {status}: {reason}"
        if status != "ok":
            worst = status if worst in ("ok", "refused") else worst
            note = note or reason
    wrong = kind.check(work) if kind.check is not None else None
    if wrong is not None:
        return "wrong", f"wrong: {wrong}"
    return worst, note


def campaign(kind: Kind, cases: int, work: Path, failures: Path, *, limit: float = 20.0,
             rng_seed: int = 0, progress: Callable[[Report], None] | None = None,
             every: int = 500) -> Report:
    """Run `cases` hypothesis-generated mutants of `kind`'s seeds; failing inputs go to
    `failures/<kind>/<sha>.bin`; `progress(report)` every `every` cases. Never raises for a
    failing case (it is counted)."""
    work.mkdir(parents=True, exist_ok=True)
    corpus = kind.seeds(work)
    report = Report(kind.name)
    start = time.perf_counter()

    @seed(rng_seed)
    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        mutant = corpus[data.draw(st.integers(0, len(corpus) - 1), label="seed")]
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            try:
                mutant = kind.mutate(mutant, data)
            except Exception:  # a mutator's own bug must not end the campaign
                report.counts["mutator errors"] += 1
                mutant = mutate_bytes(mutant, data)
        began = time.perf_counter()
        status, reason = run_case(kind, mutant, work, limit)
        report.slowest = max(report.slowest, time.perf_counter() - began)
        report.cases += 1
        report.counts[status] += 1
        report.seconds = time.perf_counter() - start
        if progress is not None and report.cases % every == 0:
            progress(report)
        if status == "uncoded" and reason is not None:
            report.uncoded[reason.split(": ")[0][:80]] += 1
        if status == "refused" and reason is not None:
            report.refused[_refusal(reason)] += 1
        if status in FAILING:
            name = hashlib.sha256(mutant).hexdigest()[:16] + ".bin"
            target = failures / kind.name / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(mutant)
            report.failures[reason] = target

    one()
    report.seconds = time.perf_counter() - start
    return report
