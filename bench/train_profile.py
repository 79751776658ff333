"""Where a training step's time goes: the compiled forward+backward program of
bench/train_gpt.py's GPT, its bound instructions timed one by one, summed by kind.

    python bench/train_profile.py [SHAPE] [--tp N] [--rounds N] [--top K] [--micro-batch B]
                                  [--vocab V]

Trains SHAPE (`LAYERSxHIDDENxSEQ`, default 4x512x256) on one rank for two steps as
bench/train_gpt.py does, then runs the rank's forward+backward program's bound steps one at a
time `--rounds` times on the last step's arguments, and prints per kind (opcode and operand
shapes, as bench/op_profile.py labels them) the count and the median milliseconds per
execution, largest first, after the median total and the median CPU time of
the program run whole (all threads' process time). The
per-step timer adds a little to each step: compare kinds, not the total with the benchmark.

With `--tp N` the job has N tensor-parallel ranks (threads of this process, no sequence
parallelism, as train_gpt.py's TP side), and every rank's program is timed at once, each
on its rank's thread (their collectives need each other), round by round; per rank and
kind it prints the median wall milliseconds and the rank thread's CPU milliseconds: where
the wall is above the CPU time the rank waited (a collective for its peers, the GIL, or
the machine). Run it with the BLAS count the job would use (OPENBLAS_NUM_THREADS).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from op_profile import KindTimes, as_executed, kinds, time_kinds  # noqa: E402
from result_files import add_results_argument, recording  # noqa: E402
from train_gpt import run_nxcc  # noqa: E402

from nxcc.backend.runtime.channels import LocalChannels  # noqa: E402
from nxcc.driver.train import engine  # noqa: E402
from nxcc.driver.train.ranks import run_rank_threads  # noqa: E402


def captured_trainers() -> list[engine.RankTrainer]:
    """Every RankTrainer made from now on, in the order made."""
    made: list[engine.RankTrainer] = []
    init = engine.RankTrainer.__init__

    def keep(self: engine.RankTrainer, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    engine.RankTrainer.__init__ = keep  # type: ignore[method-assign]
    return made


def profile(trainer: engine.RankTrainer, rounds: int, top: int) -> list[dict]:
    """Time the forward+backward program's steps one by one; print and return the kinds."""
    executor = trainer.executors["forward_backward"]
    function = executor.functions[executor.entry]
    bound = function.bound(executor)
    labels = kinds(function)
    times = time_kinds(bound, labels, rounds)
    per_kind, totals = times.wall, times.totals
    with as_executed(bound):
        cpu = []
        for _ in range(rounds):  # untimed steps: the whole program's CPU time
            start = time.process_time()
            for step in bound.steps:
                step()
            cpu.append(time.process_time() - start)
    count = collections.Counter(labels)
    print(f"forward_backward: {len(labels)} instructions, split: {bound.own_threads}, "
          f"median total {statistics.median(totals) * 1e3:.1f} ms over {rounds} rounds, "
          f"CPU time {statistics.median(cpu) * 1e3:.1f} ms (min {min(cpu) * 1e3:.1f})")
    rows = sorted(per_kind.items(), key=lambda kv: -statistics.median(kv[1]))
    by_op: dict[str, float] = collections.defaultdict(float)
    for label, seconds in rows:
        by_op[label.split()[0]] += statistics.median(seconds)
    print("by opcode: " + ", ".join(f"{op} {s * 1e3:.1f}" for op, s in
                                   sorted(by_op.items(), key=lambda kv: -kv[1])))
    for label, seconds in rows[:top]:
        print(f"{statistics.median(seconds) * 1e3:9.3f} ms  x{count[label]:<4} {label}")
    return [{"kind": label, "count": count[label], "median_ms": statistics.median(s) * 1e3}
            for label, s in rows]


def profile_ranks(trainers: list[engine.RankTrainer], rounds: int, top: int) -> list[dict]:
    """Time every rank's forward+backward program at once, each on a thread of its own;
    print and return each rank's kinds (wall and the rank thread's CPU time)."""
    programs = []
    for trainer in trainers:
        executor = trainer.executors["forward_backward"]
        function = executor.functions[executor.entry]
        programs.append((function.bound(executor), kinds(function)))
    meet = threading.Barrier(len(programs), timeout=600)

    def run(rank: int) -> KindTimes:
        bound, labels = programs[rank]
        return time_kinds(bound, labels, rounds, meet.wait)

    # as the job runs its ranks: threads sharing the BLAS's threads
    timed = run_rank_threads(list(range(len(programs))), LocalChannels(600), run)
    rows = []
    for rank, ((_, labels), times) in enumerate(zip(programs, timed, strict=True)):
        count = collections.Counter(labels)
        wall = {k: statistics.median(v) for k, v in times.wall.items()}
        cpu = {k: statistics.median(v) for k, v in times.cpu.items()}
        print(f"rank {rank} forward_backward: {len(labels)} instructions, median total "
              f"{statistics.median(times.totals) * 1e3:.1f} ms over {rounds} rounds, rank "
              f"thread CPU {sum(cpu.values()) * 1e3:.1f} ms")
        by_op: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
        for label in wall:
            by_op[label.split()[0]][0] += wall[label]
            by_op[label.split()[0]][1] += cpu[label]
        print("by opcode (wall/CPU): " + ", ".join(
            f"{op} {w * 1e3:.1f}/{c * 1e3:.1f}"
            for op, (w, c) in sorted(by_op.items(), key=lambda kv: -kv[1][0])))
        ranked = sorted(wall, key=lambda k: -wall[k])
        for label in ranked[:top]:
            print(f"{wall[label] * 1e3:9.3f} ms {cpu[label] * 1e3:9.3f} CPU  x{count[label]:<4} "
                  f"{label}")
        rows += [{"rank": rank, "kind": label, "count": count[label],
                  "median_ms": wall[label] * 1e3, "cpu_ms": cpu[label] * 1e3}
                 for label in ranked]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", nargs="?", default="4x512x256")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    add_results_argument(parser)
    args = parser.parse_args()
    if args.tp < 1:
        raise SystemExit("ERROR: --tp must be at least 1")
    trainers = captured_trainers()
    with tempfile.TemporaryDirectory(prefix="nxcc-train-profile-") as tmp:
        steps = run_nxcc(args.shape, args.micro_batch, args.vocab, 1, 1, args.tp, Path(tmp))
    print(f"{args.shape}: step {steps[-1] * 1e3:.1f} ms")
    name = args.shape if args.tp == 1 else f"{args.shape}-tp{args.tp}"
    with recording(f"train_profile-{name}", f"Where a {args.shape} training step's time goes"
                   + (f" at TP{args.tp}" if args.tp > 1 else ""), args.results) as rec:
        rec.data["kinds"] = (profile(trainers[-1], args.rounds, args.top) if args.tp == 1
                             else profile_ranks(trainers[-args.tp:], args.rounds, args.top))


if __name__ == "__main__":
    main()
