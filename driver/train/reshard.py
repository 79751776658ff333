"""Resuming from a checkpoint another layout wrote: its shards made whole, then cut anew.

A checkpoint holds, per (TP, PP) rank, the parameters by name (that rank's slices) and, per
DP rank (ZeRO-1) or once, the optimizer state as flat vectors in that rank's `FlatLayout`
(`slot0`, `slot1`, and `master` with an f32 master copy). `whole_state(found, unshard,
bucket_bytes)` reads every shard of a checkpoint written by layout `found.layout`, rebuilds
each writer's flat layout from its parameters' names and shapes (the parameter file keeps
the program's order), reassembles ZeRO-1 chunks, and joins the pipeline parts (a projection
a cut inside a layer split between two stages) and TP slices of every tensor with the
model's own `unshard(name, parts, kv_replicator)`: whole parameters by name and whole
optimizer state by key and name. A rank of the new layout then takes its slices of
both (`RankTrainer.load_whole`), so any TP x PP x DP (and ZeRO-1 on or off) continues
where the other stopped; the precision must be the same (its state differs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train.flat import FlatLayout

Arrays = dict[str, np.ndarray]
# (name, each TP rank's parts in pipeline-stage order, kv_replicator) -> the whole tensor
Unshard = Callable[[str, list[list[np.ndarray]], int], np.ndarray]


def _flat_state(found: ckpt.Checkpoint, layout: FlatLayout, tp: int, pp: int, dp: int,
                zero1: bool) -> Arrays:
    """Each optimizer key's whole flat vector of rank (tp, pp)."""
    if not zero1:
        return found.optim(0, tp, pp)
    shards = [found.optim(d, tp, pp) for d in range(dp)]
    out = {}
    for key in shards[0]:
        flat = np.zeros(layout.size, np.float32)
        for d, shard in enumerate(shards):
            layout.unshard_into(flat, shard[key], d)
        out[key] = flat
    return out


def whole_params(found: ckpt.Checkpoint, unshard: Unshard) -> Arrays:
    """The whole parameters by name of `found` (its optimizer state not read)."""
    lay = found.layout
    tp, pp = int(lay["tp"]), int(lay["pp"])  # type: ignore[call-overload]
    kv = int(lay.get("kv_replicator", 1))  # type: ignore[call-overload]
    params: dict[str, list[list[np.ndarray]]] = {}
    for p in range(pp):
        for t in range(tp):
            for n, arr in found.params(t, p).items():
                params.setdefault(n, [[] for _ in range(tp)])[t].append(arr)
    return {n: unshard(n, parts, kv) for n, parts in params.items()}


def whole_state(found: ckpt.Checkpoint, unshard: Unshard, bucket_bytes: int
                ) -> tuple[Arrays, dict[str, Arrays]]:
    """(whole parameters by name, whole optimizer state by key and name) of `found` (see
    the module docstring)."""
    lay = found.layout
    tp, pp, dp = int(lay["tp"]), int(lay["pp"]), int(lay["dp"])  # type: ignore[call-overload]
    zero1 = bool(lay["zero1"]) and dp > 1
    kv = int(lay.get("kv_replicator", 1))  # type: ignore[call-overload]
    params: dict[str, list[list[np.ndarray]]] = {}
    state: dict[str, dict[str, list[list[np.ndarray]]]] = {}
    for p in range(pp):  # stage order: a tensor two stages hold parts of is joined in it
        for t in range(tp):
            arrays = found.params(t, p)
            names = list(arrays)
            layout = FlatLayout([arrays[n].shape for n in names], dp, bucket_bytes)
            for n in names:
                params.setdefault(n, [[] for _ in range(tp)])[t].append(arrays[n])
            for key, flat in _flat_state(found, layout, t, p, dp, zero1).items():
                by_name = state.setdefault(key, {})
                for n, view in zip(names, layout.views(flat), strict=True):
                    by_name.setdefault(n, [[] for _ in range(tp)])[t].append(view)
    whole = {n: unshard(n, parts, kv) for n, parts in params.items()}
    return whole, {k: {n: unshard(n, parts, kv) for n, parts in by_name.items()}
                   for k, by_name in state.items()}
