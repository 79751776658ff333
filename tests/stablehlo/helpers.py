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
    """`ir_text` with every %value and @function renamed by order of first appearance
    (%v0, %v1, ..., @f0, @f1, ...), so two printings that differ only in names are equal."""
    seen: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        key = m.group(0)
        if key not in seen:
            count = sum(1 for k in seen if k[0] == m.group(1))
            seen[key] = f"{m.group(1)}{'v' if m.group(1) == '%' else 'f'}{count}"
        return seen[key]

    return _NAME.sub(rename, ir_text)
