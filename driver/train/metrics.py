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
from typing import IO

from nxcc.backend.userfiles import UserFileError, read_regular
from nxcc.backend.userfiles.structured import load_json_text
from nxcc.driver.output import write_bytes_atomically
from nxcc.driver.train.errors import TrainConfigError

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


def check_metrics_file(exp_dir: str) -> str:
    """The metrics file's path; TrainConfigError when something other than a regular file
    (a link, a folder, a FIFO, a device) has its name, which the run would write through."""
    path = os.path.join(exp_dir, FILENAME)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
        raise TrainConfigError("exp_manager.exp_dir", f"{path} is not a regular file (a "
                               "link, a folder, a FIFO or a device): nxcc writes the run's "
                               "metrics there; move it away")
    return path


class MetricsWriter:
    """Appends one JSON line per logged step to `exp_dir/metrics.jsonl` (line-flushed).

    `resume_step`: None starts the file afresh; a step number keeps the lines up to it."""

    def __init__(self, exp_dir: str, resume_step: int | None = None) -> None:
        self.path = check_metrics_file(exp_dir)
        if resume_step is None:
            mode = "w"
        else:
            keep_through(self.path, resume_step)
            mode = "a"
        self._file: IO[str] | None = open(self.path, mode, encoding="utf-8", buffering=1)

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


#: The largest metrics file read back (a million logged steps take about 300 MB).
MAX_METRICS_BYTES = 1 << 30


def read_metrics(path: str) -> list[dict[str, object]]:
    """The records of a metrics file: its lines that are JSON objects (a last line cut
    short by a crash, or anything else, is skipped); read as a regular file of bounded size
    with each line's nesting bounded (TrainConfigError otherwise)."""
    try:
        raw = read_regular(path, MAX_METRICS_BYTES, "metrics file")
    except UserFileError as exc:
        raise TrainConfigError("exp_manager.exp_dir", str(exc)) from None
    records = []
    for line in raw.splitlines():
        try:
            record = load_json_text(line, path)
        except UserFileError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def keep_through(path: str, step: int) -> None:
    """Rewrite `path` (atomically) without the records of steps after `step`."""
    if not os.path.exists(path):
        return
    kept = [r for r in read_metrics(path) if isinstance(s := r.get("step"), int) and s <= step]
    text = "".join(json.dumps(r, allow_nan=False) + "\n" for r in kept)
    write_bytes_atomically(path, text.encode("utf-8"))
