"""`python -m tests.fuzz --kind neff --cases 10000`: the long fuzz run.

Runs each kind's campaign in this process (CLI commands in-process, a per-case time limit,
the address space capped at the current size + --memory-gib so no case can take more),
prints one line of counts per kind and every failure with the file it was saved to, and
exits 1 when any case crashed, hung or ran over memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

from tests.fuzz.harness import campaign
from tests.fuzz.kinds import KINDS


def cap_memory(gib: float) -> None:
    """Cap this process's address space at its current size plus `gib` GiB."""
    with open("/proc/self/statm") as f:
        current = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = current + int(gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--kind", action="append", choices=sorted(KINDS),
                        help="input kind (repeatable; default: all)")
    parser.add_argument("--cases", type=int, default=1000, help="cases per kind")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed")
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per case")
    parser.add_argument("--memory-gib", type=float, default=2.0,
                        help="address space a run may add (GiB)")
    parser.add_argument("--refusals", type=int, default=0,
                        help="list the N most common refusals (code and first words)")
    parser.add_argument("--failures", type=Path, default=Path("fuzz-failures"),
                        help="where failing inputs are saved")
    args = parser.parse_args(argv)
    os.environ.setdefault("NEURON_RT_EXEC_TIMEOUT", "5")
    bad = 0
    with tempfile.TemporaryDirectory(prefix="nxcc-fuzz-") as tmp:
        os.environ["NXCC_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        os.environ["NEURON_COMPILE_CACHE_URL"] = str(Path(tmp) / "compile-cache")
        os.chdir(tmp)  # a compile's default log file lands here, not in the repository
        kinds = args.kind or sorted(KINDS)
        cap_memory(args.memory_gib)
        for name in kinds:
            report = campaign(KINDS[name], args.cases, Path(tmp) / name,
                              args.failures.resolve(), limit=args.time_limit,
                              rng_seed=args.seed,
                              progress=lambda r: print("  ..." + r.line(), flush=True))
            print(report.line(), flush=True)
            for first, count in report.uncoded.most_common(5):
                print(f"  uncoded x{count}: {first}", flush=True)
            if args.refusals:
                for first, count in report.refused.most_common(args.refusals):
                    print(f"  refused x{count}: {first}", flush=True)
            for reason, path in report.failures.items():
                print(f"  FAIL {path}: {reason}", flush=True)
            bad += len(report.failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
