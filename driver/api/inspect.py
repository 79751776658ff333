"""`nxcc.inspect`: what a NEFF holds, as one JSON-able object (`neuronx-cc inspect-neff --json`
prints it; its text and dot forms are drawn from the same reading)."""

from __future__ import annotations

import os

from nxcc.backend.neff import NeffFile, read_neff
from nxcc.backend.neff.artifact import Neff
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.validate import check_neff
from nxcc.passes.sharding.cost_model import rank_traffic


def describe_collective(entry: dict) -> dict:
    """A manifest collective with the bytes each rank and all ranks move per execution
    (the bandwidth-optimal ring formulas of `passes.sharding.cost_model`)."""
    groups = entry.get("replica_groups") or [[0]]
    ranks = sum(len(g) for g in groups)
    size = max((len(g) for g in groups), default=1)
    if entry.get("kind") in ("send", "recv_done"):
        # one transfer per pair, counted at its send (recv_done is the same transfer)
        pairs = entry.get("source_target_pairs", [])
        per_rank = int(entry.get("bytes", 0)) if entry["kind"] == "send" else 0
        return {**entry, "traffic_bytes_per_rank": per_rank,
                "traffic_bytes": per_rank * len(pairs)}
    if entry.get("kind") == "collective_permute":
        pairs = entry.get("source_target_pairs", [])
        size, ranks = 2, len(pairs)
    per_rank = rank_traffic(entry["kind"], int(entry.get("bytes", 0)), size)
    return {**entry, "traffic_bytes_per_rank": per_rank, "traffic_bytes": per_rank * ranks}


def inspect(neff: str | os.PathLike[str] | Neff) -> dict:
    """What the NEFF holds, as one JSON-able object (what `neuronx-cc inspect-neff --json`
    prints): header, hash check, target and LNC, inputs, outputs, subgraphs, collectives
    with the bytes they move, SPMD layout, weights, compiler flags, aliases and state.
    `file` is the path (None for a NEFF in memory or the compiler's temporary file).
    NeffError when it cannot be read."""
    if isinstance(neff, Neff):
        with neff.as_file() as path:
            return dict(inspect(path), file=None if neff.temporary else neff.path)
    path = os.fspath(neff)
    return describe(read_checked(path), path)


def read_checked(path: str) -> NeffFile:
    """The NEFF at `path`, read and validated (NeffError otherwise)."""
    neff = read_neff(path)
    check_neff(neff)
    return neff


def describe(neff: NeffFile, path: str) -> dict:
    """The read NEFF `neff` (from `path`) as `inspect` gives it."""
    m = neff.manifest
    header = neff.header.to_dict()
    collectives = [describe_collective(c) for c in m.get("collectives", [])]
    return {
        "file": path,
        "header": header,
        "hash_ok": neff.hash_ok,
        "target": m.get("target"),
        "lnc": m.get("lnc"),
        "inputs": [TensorInfo.from_manifest(e).to_json() for e in m.get("inputs", [])],
        "outputs": [TensorInfo.from_manifest(e).to_json() for e in m.get("outputs", [])],
        "subgraphs": [{"name": sg["name"], "core": sg.get("core"), "ops": sg.get("ops"),
                       "flops": sg.get("flops"),
                       "collectives": sum(1 for c in collectives
                                          if sg["name"] in c.get("subgraphs", []))}
                      for sg in m.get("subgraphs", [])],
        "collectives": collectives,
        "communication": {"collectives": len(collectives),
                          "bytes_per_execution": sum(c["traffic_bytes"] for c in collectives)},
        "spmd": m.get("spmd"),
        "weights": {"files": len(m.get("weights", {}).get("files", {})),
                    "bytes": m.get("weights", {}).get("bytes", 0)},
        "compiler": m.get("compiler", {}),
        "input_output_alias": m.get("input_output_alias", []),
        "state": [{k: e[k] for k in ("name", "input", "output")} for e in m.get("state", [])],
    }
