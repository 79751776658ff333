"""Where a training step's time goes: the compiled forward+backward program of
bench/train_gpt.py's GPT, its bound instructions timed one by one, summed by kind.

    python bench/train_profile.py [SHAPE] [--rounds N] [--top K] [--micro-batch B]
                                  [--vocab V]

Trains SHAPE (`LAYERSxHIDDENxSEQ`, default 4x512x256) on one rank for two steps as
bench/train_gpt.py does, then runs the rank's forward+backward program's bound steps one at a
time `--rounds` times on the last step's arguments, and prints per kind (opcode and operand
shapes, as bench/op_profile.py labels them) the count and the median milliseconds per
execution, largest first, after the median total and the median CPU time of
the program run whole (all threads' process time). The
per-step timer adds a little to each step: compare kinds, not the total with the benchmark.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from op_profile import as_executed, kinds, time_kinds  # noqa: E402
from result_files import add_results_argument, recording  # noqa: E402
from train_gpt import run_nxcc  # noqa: E402

from nxcc.driver.train import engine  # noqa: E402


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
    per_kind, totals = time_kinds(bound, labels, rounds)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", nargs="?", default="4x512x256")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    add_results_argument(parser)
    args = parser.parse_args()
    trainers = captured_trainers()
    with tempfile.TemporaryDirectory(prefix="nxcc-train-profile-") as tmp:
        steps = run_nxcc(args.shape, args.micro_batch, args.vocab, 1, 1, 1, Path(tmp))
    print(f"{args.shape}: step {steps[-1] * 1e3:.1f} ms")
    with recording(f"train_profile-{args.shape}", f"Where a {args.shape} training step's "
                   f"time goes", args.results) as rec:
        rec.data["kinds"] = profile(trainers[-1], args.rounds, args.top)


if __name__ == "__main__":
    main()
