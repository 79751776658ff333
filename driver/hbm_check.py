"""The compiler refuses a program that cannot load: its peak HBM over the core's.

`check_peak_hbm(cores, target, lnc)` estimates each core program's peak HBM
(`backend.program.estimate.peak_hbm`: weights, inputs, arena, collective buffers) and its
device time, and raises `CompileError` NCC_EOOM001 when the programs of one logical core
(the `lnc` physical cores it groups) need more than its HBM (`ir.hardware`: 16 GiB per
trn1 core, 24 GiB per trn2 core at LNC 2), in one line as the real compiler words it:

    [NCC_EOOM001] Estimated peak HBM usage (22.839451) exceeds 16GB. Neff won't be able to
    load on chip (sg00: weights 20.1 GiB, inputs ..., arena ..., collective buffers ...)

(GiB, as the real tool's figures are; bytes when the limit is under 1 GiB). Nothing is
written then. `NXCC_HBM_LIMIT` lowers (or
raises) the limit per logical core: bytes, or a number with K, M or G (KiB, MiB, GiB), so a
test can meet the refusal without a 16 GiB model. Otherwise the estimates go into the
NEFF's manifest, one per subgraph, for `inspect-neff`.
"""

from __future__ import annotations

import os
import re

from nxcc.backend.program.estimate import device_seconds, peak_hbm
from nxcc.driver.errors import CompileError
from nxcc.errors import BAD_ARGUMENT, OUT_OF_MEMORY
from nxcc.ir.core import Module
from nxcc.ir.hardware import TARGET_CHIPS

LIMIT_VARIABLE = "NXCC_HBM_LIMIT"
_SIZE = re.compile(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", re.IGNORECASE)


def hbm_limit(target: str, lnc: int) -> int:
    """Bytes of HBM one logical core of `target` at LNC `lnc` has, or `NXCC_HBM_LIMIT`'s."""
    text = os.environ.get(LIMIT_VARIABLE)
    if text is None or text == "":
        return TARGET_CHIPS[target].core_hbm_bytes(lnc)
    match = _SIZE.fullmatch(text)
    if not match:
        raise CompileError(BAD_ARGUMENT, f"{LIMIT_VARIABLE}={text!r}: expected bytes, or a "
                           "number with K, M or G (e.g. 64M)")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2).upper() or " ")


def check_peak_hbm(cores: list[Module], target: str, lnc: int) -> list[dict]:
    """Each core program's estimate (peak HBM bytes by part, device seconds); CompileError
    NCC_EOOM001 when a logical core's programs exceed its HBM (see the module
    docstring)."""
    limit = hbm_limit(target, lnc)
    chip = TARGET_CHIPS[target]
    peaks = [peak_hbm(core) for core in cores]
    for first in range(0, len(cores), lnc):
        group = peaks[first:first + lnc]
        total = sum(p.total for p in group)
        if total > limit:
            worst = max(range(len(group)), key=lambda i: group[i].total)
            p = group[worst]
            usage, cap = (f"{total / 2**30:.6f}", f"{limit / 2**30:g}GB") \
                if limit >= 2**30 else (f"{total} bytes", f"{limit} bytes")
            raise CompileError(OUT_OF_MEMORY, (
                f"Estimated peak HBM usage ({usage}) exceeds {cap}. Neff won't be able to "
                f"load on chip (sg{first + worst:02d}: weights {_size(p.weights)}, inputs "
                f"{_size(p.inputs)}, arena {_size(p.arena)}, collective buffers "
                f"{_size(p.collectives)})"))
    return [{"peak_hbm_bytes": p.to_json(), "hbm_limit_bytes": limit,
             "device_seconds": device_seconds(core, chip, 1)}
            for p, core in zip(peaks, cores, strict=True)]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"
