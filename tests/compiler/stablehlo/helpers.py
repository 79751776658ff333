"""Shared by the StableHLO tests: the fixtures, their stored arrays, and comparing IR."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MLIR_FIXTURES = sorted(FIXTURES.glob("*.mlir"))


def arrays_of(path: Path) -> dict[str, np.ndarray]:
    """The inputs and JAX's outputs stored next to `path` (NAME.npz for NAME.mlir)."""
    data = np.load(path.with_suffix(".npz"))
    out = {}
    for key in data.files:
        if key.startswith("bf16:"):
            out[key[5:]] = data[key].view(ml_dtypes.bfloat16)
        else:
            out[key] = data[key]
    return out


def outputs_of(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [arrays[f"output{i}"] for i in range(sum(k.startswith("output") for k in arrays))]


def inputs_of(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [arrays[f"input{i}"] for i in range(sum(k.startswith("input") for k in arrays))]


_NAME = re.compile(r'([%@])("(?:[^"\\]|\\.)*"|[\w.$\-]+)')


def normalise_names(ir_text: str) -> str:
    """`ir_text` with every @function renamed by order of first appearance (@f0, @f1, ...)
    and every %value by order of first appearance within its function (%v0, %v1, ...), so
    two printings that differ only in names are equal."""
    tables: dict[str, dict[str, str]] = {"@": {}, "%": {}}

    def rename(m: re.Match[str]) -> str:
        table = tables[m.group(1)]
        if m.group(0) not in table:
            table[m.group(0)] = f"{'%v' if m.group(1) == '%' else '@f'}{len(table)}"
        return table[m.group(0)]

    out = []
    for line in ir_text.splitlines():
        if line.lstrip().startswith("func @"):
            tables["%"] = {}
        out.append(_NAME.sub(rename, line))
    return "\n".join(out)
