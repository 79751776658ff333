"""Resuming from a checkpoint another layout wrote: its shards made whole, then cut anew.

A checkpoint holds, per (TP, PP) rank, the parameters by name (that rank's slices) and, per
DP rank (ZeRO-1) or once, the optimizer state as flat vectors in that rank's `FlatLayout`
(`slot0`, `slot1`, and `master` with an f32 master copy). `whole_state(found, unshard,
bucket_bytes, keys)` reads every shard of a checkpoint written by layout `found.layout`, rebuilds
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
                zero1: bool, keys: list[str]) -> Arrays:
    """Each optimizer key's whole flat vector of rank (tp, pp); every shard must hold
    exactly `keys`, each an f32 vector of its DP rank's length."""
    expected: dict[str, tuple[tuple[int, ...], np.dtype]] = {
        k: ((layout.shard_size(zero1),), np.dtype(np.float32)) for k in keys}
    if not zero1:
        return found.read(ckpt.optim_name(0, tp, pp), expected)
    shards = [found.read(ckpt.optim_name(d, tp, pp), expected) for d in range(dp)]
    out = {}
    for key in shards[0]:
        flat = np.zeros(layout.size, np.float32)
        for d, shard in enumerate(shards):
            layout.unshard_into(flat, shard[key], d)
        out[key] = flat
    return out


def written_layout(found: ckpt.Checkpoint) -> tuple[int, int, int, bool, int]:
    """(tp, pp, dp, zero1, kv_replicator) of the layout that wrote `found`, checked: sizes
    at least 1, and the files its manifest lists exactly that layout's shards."""
    lay = found.layout
    sizes = [lay.get(k) for k in ("tp", "pp", "dp")] + [lay.get("kv_replicator", 1)]
    zero1 = lay.get("zero1", 0)
    whole = [v for v in sizes if isinstance(v, int) and not isinstance(v, bool) and v >= 1]
    if len(whole) != len(sizes) or zero1 not in (0, 1):
        raise ckpt.CheckpointError(found.path, f"has the layout {lay}: tp, pp, dp and "
                                   "kv_replicator must be whole numbers of at least 1, "
                                   "zero1 0 or 1")
    tp, pp, dp, kv = whole
    names = set(ckpt.shard_names(tp, pp, dp, bool(zero1)))
    if set(found.files) != names:
        odd = sorted(set(found.files) ^ names)[0]
        raise ckpt.CheckpointError(found.path, f"{'lists' if odd in found.files else 'lacks'}"
                                   f" {odd}, for its layout {lay}")
    return tp, pp, dp, bool(zero1) and dp > 1, kv


def whole_state(found: ckpt.Checkpoint, unshard: Unshard, bucket_bytes: int,
                keys: list[str]) -> tuple[Arrays, dict[str, Arrays]]:
    """(whole parameters by name, whole optimizer state by key and name) of `found` (see
    the module docstring); `keys` are the optimizer state's. CheckpointError for a layout,
    shard or array that does not fit together (f32 parameters, the same names in every
    TP rank of a stage, each optimizer key an f32 vector of its shard's length)."""
    tp, pp, dp, zero1, kv = written_layout(found)
    params: dict[str, list[list[np.ndarray]]] = {}
    state: dict[str, dict[str, list[list[np.ndarray]]]] = {}
    for p in range(pp):  # stage order: a tensor two stages hold parts of is joined in it
        stage_names: list[str] | None = None
        for t in range(tp):
            arrays = _stage_params(found, t, p, stage_names)
            names = stage_names = list(arrays)
            layout = FlatLayout([arrays[n].shape for n in names], dp, bucket_bytes)
            for n in names:
                params.setdefault(n, [[] for _ in range(tp)])[t].append(arrays[n])
            for key, flat in _flat_state(found, layout, t, p, dp, zero1, keys).items():
                by_name = state.setdefault(key, {})
                for n, view in zip(names, layout.views(flat), strict=True):
                    by_name.setdefault(n, [[] for _ in range(tp)])[t].append(view)
    return _joined(found, unshard, params, kv), {
        k: _joined(found, unshard, by_name, kv) for k, by_name in state.items()}


def whole_params(found: ckpt.Checkpoint, unshard: Unshard) -> Arrays:
    """The whole parameters by name of `found` (its optimizer state not read), checked as
    `whole_state` checks them."""
    tp, pp, _, _, kv = written_layout(found)
    params: dict[str, list[list[np.ndarray]]] = {}
    for p in range(pp):
        stage_names: list[str] | None = None
        for t in range(tp):
            arrays = _stage_params(found, t, p, stage_names)
            stage_names = list(arrays)
            for n, arr in arrays.items():
                params.setdefault(n, [[] for _ in range(tp)])[t].append(arr)
    return _joined(found, unshard, params, kv)


def _stage_params(found: ckpt.Checkpoint, t: int, p: int, stage_names: list[str] | None
                  ) -> Arrays:
    """The parameter shard of TP rank `t` of stage `p`: float32 arrays, named as TP rank
    0's of the stage (`stage_names`, None for rank 0 itself)."""
    arrays = found.params(t, p)
    names = list(arrays)
    bad = [n for n in names if arrays[n].dtype != np.float32]
    if bad or (stage_names is not None and names != stage_names):
        what = f"'{bad[0]}' is {arrays[bad[0]].dtype}, not float32" if bad else \
            f"its arrays differ from TP rank 0's ({names} against {stage_names})"
        raise ckpt.CheckpointError(f"{found.path}/{ckpt.params_name(t, p)}", what)
    return arrays


def _joined(found: ckpt.Checkpoint, unshard: Unshard,
            parts: dict[str, list[list[np.ndarray]]], kv: int) -> Arrays:
    """Each tensor of `parts` made whole; CheckpointError when a name or slice is not this
    model's."""
    try:
        return {n: unshard(n, pieces, kv) for n, pieces in parts.items()}
    except (KeyError, ValueError, IndexError) as exc:
        raise ckpt.CheckpointError(found.path, f"cannot be joined into this model's tensors "
                                   f"({type(exc).__name__}: {str(exc)[:120]})") from None
