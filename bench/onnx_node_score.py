"""The ONNX node conformance score of nxcc: every node case of onnx's suite, run as onnx's
runner runs it (tests/compiler/onnx/node_suite/suite.py), then passed / total and the
failures grouped by operator.

    PYTHONPATH=. python -m bench.onnx_node_score [-j JOBS] [-k SUBSTRING] [--timeout S]
                                                [--write-expected] [-v]

Scoring: a case passes when its outputs match (the case's rtol/atol; 1e-3/1e-7 by default).
A case skipped under one of `SKIP_GROUPS` (training-only ops, string, sequence/optional/map
types) is not a failure; any other case that does not pass is one. The score is
(passed + skipped by rule) / 1884, and the line below it gives passed / cases run. It
also counts the passing cases that needed inputs frozen in at compile time (see
backend/onnx_backend.py), and those whose every input was frozen.
`--write-expected` rewrites tests/compiler/onnx/node_suite/expected_pass.txt with the passing cases.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections import defaultdict
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from result_files import add_results_argument, recording  # noqa: E402

from tests.compiler.onnx.node_suite import suite  # noqa: E402


class CaseTimeout(Exception):
    """A case ran past --timeout."""


def _alarm(_signum: int, _frame: object) -> None:
    raise CaseTimeout()


_REPS: list = []


def _init_worker() -> None:
    """Per worker: the alarm for --timeout, the suite, and a record of every prepared rep
    (to see which inputs a case needed frozen)."""
    import nxcc.driver.onnx_backend as nxcc

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGALRM, _alarm)
    suite.node_test_class()
    prepare = nxcc.prepare

    def recording_prepare(*args: object, **kwargs: object) -> object:
        rep = prepare(*args, **kwargs)
        _REPS.append(rep)
        return rep

    nxcc.prepare = recording_prepare


def run_one(args: tuple[str, int]) -> tuple[str, str, str, float]:
    """(name, status, message, seconds): status pass, fail or timeout; a passing case whose
    rep froze inputs has message ``frozen:N/M`` (N of its M inputs compiled in)."""
    name, timeout = args
    start = time.perf_counter()
    signal.alarm(timeout)
    _REPS.clear()
    try:
        suite.case_method(name)()
        status, message = "pass", ""
        frozen = [(len(r.frozen), len(r.input_names)) for r in _REPS if r.frozen]
        if frozen:
            message = "frozen:{}/{}".format(*frozen[0])
    except CaseTimeout:
        status, message = "timeout", f"over {timeout} s"
    except BaseException as exc:  # noqa: BLE001 - a failing case is data here
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        first = lines[0] if lines else ""
        if isinstance(exc, AssertionError) and len(lines) > 1:
            first = " ".join(ln.strip() for ln in lines[:4])
        status, message = "fail", f"{type(exc).__name__}: {first}"[:300]
        if os.environ.get("NXCC_SCORE_TRACEBACK"):
            message += "\n" + traceback.format_exc()
    finally:
        signal.alarm(0)
    return name, status, message, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("-k", "--filter", default="", help="only cases whose name contains it")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per case")
    parser.add_argument("--write-expected", action="store_true",
                        help=f"rewrite {suite.EXPECTED_PASS.name} with the passing cases")
    parser.add_argument("-v", "--verbose", action="store_true", help="every failure's message")
    add_results_argument(parser)
    opts = parser.parse_args(argv)
    name = "onnx_node_score" + ("-filtered" if opts.filter else "")
    with recording(name, "ONNX node conformance", opts.results) as rec:
        status = score(opts)
        rec.data["status"] = status
    return status


def score(opts: argparse.Namespace) -> int:
    """Run the cases `opts` selects; print the score, the failures by operator and the
    rest; the exit status."""

    models = suite.node_models()
    skipped = suite.skipped_cases()
    names = sorted(n for n in models if opts.filter in n)
    to_run = [n for n in names if n not in skipped]
    start = time.perf_counter()
    results: list[tuple[str, str, str, float]] = []
    if opts.jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(opts.jobs, initializer=_init_worker, maxtasksperchild=200) as pool:
            results = list(pool.imap_unordered(run_one, [(n, opts.timeout) for n in to_run],
                                               chunksize=4))
    else:
        _init_worker()
        results = [run_one((n, opts.timeout)) for n in to_run]
    wall = time.perf_counter() - start

    passed = sorted(n for n, status, _m, _t in results if status == "pass")
    failures = [(n, s, m) for n, s, m, _t in results if s != "pass"]
    n_skip = sum(1 for n in names if n in skipped)
    by_op: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for n, _s, m in failures:
        by_op[suite.case_op(n)].append((n, m))

    total = len(names) if opts.filter else suite.SUITE_SIZE
    score = len(passed) + n_skip
    print(f"ONNX node conformance: {score} / {total} ({100.0 * score / max(total, 1):.1f}%)"
          f" on {date.today().isoformat()}")
    print(f"  passed {len(passed)} of {len(to_run)} cases run "
          f"({100.0 * len(passed) / max(len(to_run), 1):.1f}%), failed {len(failures)}, "
          f"skipped by rule {n_skip}; wall time {wall:.0f} s with {opts.jobs} job(s), "
          f"case time {sum(r[3] for r in results):.0f} s")
    groups: dict[str, int] = defaultdict(int)
    for n in names:
        if n in skipped:
            groups[skipped[n]] += 1
    for group, count in sorted(groups.items()):
        print(f"  skipped {count:4d} {group}: {suite.SKIP_GROUPS[group]}")
    if by_op:
        print(f"\nFailures by operator ({len(by_op)} operators):")
    for op, cases in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {op}: {len(cases)}")
        shown = cases if opts.verbose else cases[:3]
        for n, m in sorted(shown):
            print(f"      {n}: {m}")
        if len(cases) > len(shown):
            print(f"      ... and {len(cases) - len(shown)} more")
    frozen = [(n, m) for n, st, m, _t in results if st == "pass" and m.startswith("frozen:")]
    whole = sorted(n for n, m in frozen if m.split(":")[1].split("/")[0] ==
                   m.split(":")[1].split("/")[1])
    print(f"\nPassing cases compiled with inputs frozen in (values needed at compile time: "
          f"shapes, axes, scales...): {len(frozen)}; with every input frozen (the whole "
          f"case evaluated at compile time): {len(whole)}")
    ops: dict[str, int] = defaultdict(int)
    for n in whole:
        ops[suite.case_op(n)] += 1
    if ops:
        print("  all-frozen by operator: " + ", ".join(f"{o} {c}" for o, c in sorted(
            ops.items(), key=lambda kv: (-kv[1], kv[0]))))
    slow = sorted(results, key=lambda r: -r[3])[:5]
    print("\nSlowest cases: " + ", ".join(f"{n} {t:.1f}s" for n, _s, _m, t in slow))
    if opts.write_expected:
        if opts.filter:
            print("--write-expected needs the whole suite (no -k)", file=sys.stderr)
            return 2
        header = ("# Node conformance cases nxcc passes (regression guard: each must keep\n"
                  "# passing). Regenerate: PYTHONPATH=. python -m bench.onnx_node_score "
                  "--write-expected\n")
        suite.EXPECTED_PASS.write_text(header + "".join(f"{n}\n" for n in passed))
        print(f"wrote {len(passed)} cases to {suite.EXPECTED_PASS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
