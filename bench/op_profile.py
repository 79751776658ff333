"""Where one NEFF's time goes: its bound instructions timed one by one, summed by kind.

    python bench/op_profile.py F.neff MODEL.onnx [--rounds N] [--top K]

Loads F.neff as `neuronx-cc benchmark` does, feeds it seeded random inputs shaped like
MODEL.onnx's (int64 ids in [0, 100), floats standard normal), runs its entry function's
bound steps one at a time for `--rounds` executions, and prints per kind (opcode and operand
shapes; a fused op by the length of its program and its shape) the count and the median
milliseconds per execution, largest first, after the median total. The per-step timer adds
a little to each step: compare kinds, not the total with `neuronx-cc benchmark`.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_files import add_results_argument, recording  # noqa: E402

from nxcc.backend.neff import read_neff  # noqa: E402
from nxcc.backend.runtime.blas_threads import limit_process  # noqa: E402
from nxcc.backend.runtime.model import LoadedModel  # noqa: E402


def model_inputs(path: Path) -> dict[str, np.ndarray]:
    """Seeded random arrays for the graph inputs of an ONNX model (initializers skipped)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    rng = np.random.default_rng(0)
    inputs = {}
    for value in graph.input:
        if value.name in weights:
            continue
        tensor = value.type.tensor_type
        shape = [d.dim_value for d in tensor.shape.dim]
        inputs[value.name] = (rng.integers(0, 100, shape).astype(np.int64)
                              if tensor.elem_type == onnx.TensorProto.INT64
                              else rng.standard_normal(shape).astype(np.float32))
    return inputs


def kinds(function) -> list[str]:
    """A label per instruction: opcode and operand shapes (fused: program length, shape)."""
    labels = []
    for _kern, ins, outs, attrs, opcode in function.instructions:
        if opcode == "fused_elementwise":
            shape = "x".join(map(str, function.types[outs[0]].shape))
            labels.append(f"{opcode} {len(str(attrs['program']))}:{shape}")
        else:
            shapes = " ".join("x".join(map(str, function.types[i].shape)) for i in ins)
            labels.append(f"{opcode} {shapes}")
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("neff", type=Path)
    parser.add_argument("model", type=Path, help="the ONNX model the NEFF was compiled from")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--top", type=int, default=25)
    add_results_argument(parser)
    args = parser.parse_args()
    with recording(f"op_profile-{args.neff.stem}", f"Where {args.neff.name}'s time goes",
                   args.results) as rec:
        rec.data["kinds"] = profile(args.neff, args.model, args.rounds, args.top)


def profile(neff: Path, onnx_model: Path, rounds: int, top: int) -> list[dict]:
    """Time the instructions of `neff` one by one, `rounds` times; print and return the
    kinds, slowest first."""
    model = LoadedModel(read_neff(str(neff)))
    inputs = model_inputs(onnx_model)
    model.execute(inputs)  # binds the steps and fills the parameter buffers
    executor = model.executors[0]
    function = executor.functions[executor.entry]
    bound = function.bound(executor)
    labels = kinds(function)
    times = time_kinds(bound, labels, rounds)
    per_kind, totals = times.wall, times.totals
    count = collections.Counter(labels)
    print(f"{neff}: {len(labels)} instructions, median total "
          f"{statistics.median(totals) * 1e3:.3f} ms over {rounds} rounds")
    rows = sorted(per_kind.items(), key=lambda kv: -statistics.median(kv[1]))
    for label, seconds in rows[:top]:
        print(f"{statistics.median(seconds) * 1e3:9.3f} ms  x{count[label]:<4} {label}")
    return [{"kind": label, "count": count[label], "median_ms": statistics.median(s) * 1e3}
            for label, s in rows]


@contextmanager
def as_executed(bound: Any) -> Iterator[None]:
    """The conditions the executor runs a bound function in: floating-point errors ignored
    and, for a function split between the core's threads, the BLAS at one thread
    (`parallel_steps`)."""
    blas = limit_process(1, even_when_set=True) if bound.own_threads else nullcontext()
    with np.errstate(all="ignore"), blas:
        yield


def time_kinds(bound: Any, labels: list[str], rounds: int,
               start_round: Callable[[], object] | None = None) -> KindTimes:
    """The bound function's steps run one by one `rounds` times (`as_executed`): for each
    label, its seconds in each round (wall, and the calling thread's CPU time), and each
    round's total. `start_round` is called before each round (ranks timed side by side
    meet there)."""
    times = KindTimes(collections.defaultdict(list), collections.defaultdict(list), [])
    with as_executed(bound):
        for _ in range(rounds):
            if start_round is not None:
                start_round()
            spent: dict[str, float] = collections.defaultdict(float)
            used: dict[str, float] = collections.defaultdict(float)
            for step, label in zip(bound.steps, labels, strict=True):
                start, cpu = time.perf_counter(), time.thread_time()
                step()
                spent[label] += time.perf_counter() - start
                used[label] += time.thread_time() - cpu
            times.totals.append(sum(spent.values()))
            for label, seconds in spent.items():
                times.wall[label].append(seconds)
                times.cpu[label].append(used[label])
    return times


@dataclass(frozen=True)
class KindTimes:
    """`time_kinds`' figures: per label the seconds of each round, wall and CPU time of the
    thread that ran the steps; each round's total wall seconds."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    totals: list[float]


if __name__ == "__main__":
    main()
