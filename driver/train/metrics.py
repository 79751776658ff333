"""A run's figures: `exp_dir/metrics.jsonl` and one console line per logged step.

Each logged step is one JSON object on its own line, flushed as it is written: `step`,
`loss`, `lr`, `grad_norm`, `tokens_per_s`, then any extra figures the caller gives (memory,
timings). A figure that is not finite is written as null (JSON has no NaN). When a run
resumes from a checkpoint, `MetricsWriter(..., resume_step=N)` first drops the lines of
steps after N, which the interrupted run logged past its last checkpoint, so the file reads
as one uninterrupted run.
"""

from __future__ import annotations

import json
import math
import os
from types import TracebackType
from typing import TextIO

from nxcc.driver.output import write_bytes_atomically

FILENAME = "metrics.jsonl"


def _plain(value: object) -> object:
    """`value` as JSON writes it: numpy scalars as Python numbers, non-finite as None."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def should_log(step: int, every: int, max_steps: int) -> bool:
    """Whether step `step` (1 for the first) is logged: every `every` steps and the last."""
    return step % every == 0 or step == max_steps


def format_line(record: dict[str, object], max_steps: int | None = None) -> str:
    """The console line of a logged step, e.g.
    `step 3/20  loss 5.4321  lr 1.500e-03  grad_norm 2.3450  tokens/s 12345`."""
    def num(key: str, spec: str) -> str:
        value = record.get(key)
        return "nan" if value is None else format(value, spec)

    of = f"/{max_steps}" if max_steps else ""
    return (f"step {record['step']}{of}  loss {num('loss', '.4f')}  lr {num('lr', '.3e')}  "
            f"grad_norm {num('grad_norm', '.4f')}  tokens/s {num('tokens_per_s', '.0f')}")


class MetricsWriter:
    """Appends one JSON line per logged step to `exp_dir/metrics.jsonl` (line-flushed).

    `resume_step`: None starts the file afresh; a step number keeps the lines up to it."""

    def __init__(self, exp_dir: str, resume_step: int | None = None) -> None:
        self.path = os.path.join(exp_dir, FILENAME)
        if resume_step is None:
            mode = "w"
        else:
            keep_through(self.path, resume_step)
            mode = "a"
        self._file: TextIO | None = open(self.path, mode, encoding="utf-8", buffering=1)

    def log(self, step: int, loss: float, lr: float, grad_norm: float, tokens_per_s: float,
            **extra: object) -> dict[str, object]:
        """Write one step's record and return it (as written)."""
        record = {k: _plain(v) for k, v in (("step", step), ("loss", loss), ("lr", lr),
                                            ("grad_norm", grad_norm),
                                            ("tokens_per_s", tokens_per_s), *extra.items())}
        if self._file is None:
            raise ValueError("the metrics file is closed")
        self._file.write(json.dumps(record, allow_nan=False) + "\n")
        self._file.flush()
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def read_metrics(path: str) -> list[dict[str, object]]:
    """The records of a metrics file (a last line cut short by a crash is skipped)."""
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def keep_through(path: str, step: int) -> None:
    """Rewrite `path` (atomically) without the records of steps after `step`."""
    if not os.path.exists(path):
        return
    kept = [r for r in read_metrics(path) if isinstance(r.get("step"), int)
            and r["step"] <= step]
    text = "".join(json.dumps(r, allow_nan=False) + "\n" for r in kept)
    write_bytes_atomically(path, text.encode("utf-8"))
