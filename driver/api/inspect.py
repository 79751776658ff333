"""`nxcc.inspect`: what a NEFF holds, whoever built it, as one JSON-able object
(`neuronx-cc inspect-neff --json` prints it; its text and dot forms are drawn from the same
reading).

The payload is surveyed first (`backend.neff.survey`): one built by AWS's compiler is
described from its own members (`backend.neff.neuronx_payload`), one nxcc built is read and
checked as the runtime would. The hash is always computed; a payload that does not match it
is reported (`"hash_ok": false`)."""

from __future__ import annotations

import os

from nxcc.backend.neff import NeffFile, Survey, read_neff, survey_neff
from nxcc.backend.neff.artifact import Neff
from nxcc.backend.neff.constants import BUILD_VERSION_PREFIX
from nxcc.backend.neff.neuronx_payload import describe as describe_real
from nxcc.backend.neff.neuronx_payload import is_real_payload
from nxcc.backend.runtime.checked_neff import check_neff
from nxcc.backend.runtime.model import TensorInfo
from nxcc.passes.sharding.cost_model import rank_traffic

RUNS_ONLY_ON_HARDWARE = "its engine programs run only on Neuron hardware; nxcc runs NEFFs " \
    "nxcc compiled"


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
    traffic = rank_traffic(entry["kind"], int(entry.get("bytes", 0)), size)
    return {**entry, "traffic_bytes_per_rank": traffic, "traffic_bytes": traffic * ranks}


def inspect(neff: str | os.PathLike[str] | Neff) -> dict:
    """What the NEFF holds, as one JSON-able object (what `neuronx-cc inspect-neff --json`
    prints): header, hash check, producer and tool version; for a NEFF nxcc built its
    target and LNC, inputs, outputs, subgraphs, collectives with the bytes they move, SPMD
    layout, weights, compiler flags, aliases and state; for one AWS's compiler built what
    its own members say (`backend.neff.neuronx_payload`), with `runs_here` False. A damaged
    payload gives the header and `payload.error`. `file` is the path (None for a NEFF in
    memory or the compiler's temporary file). NeffError when it cannot be read at all."""
    if isinstance(neff, Neff):
        with neff.as_file() as path:
            return dict(inspect(path), file=None if neff.temporary else neff.path)
    path = os.fspath(neff)
    found = survey_neff(path)
    common = {"file": path, "header": found.header.to_dict(), "hash_ok": found.hash_ok,
              "payload": {"compressed": found.compressed, "error": found.payload_error}}
    nxcc_header = found.header.build_version.startswith(BUILD_VERSION_PREFIX)
    if found.payload_error is not None:  # damaged: what the header says, and no more
        producer = "nxcc" if nxcc_header else (
            "neuronx-cc" if is_real_payload(found) else None)
        return {**common, "producer": producer, "tool_version": _nxcc_version(found)}
    if not nxcc_header and is_real_payload(found):
        return {**common, **describe_real(found), "runs_here": False,
                "why": RUNS_ONLY_ON_HARDWARE}
    described = describe(read_checked(path), path)
    return {**common, "producer": "nxcc", "tool_version": _nxcc_version(found),
            **{k: v for k, v in described.items() if k not in common}}


def _nxcc_version(found: Survey) -> str | None:
    build = found.header.build_version
    return build[len(BUILD_VERSION_PREFIX):] if build.startswith(BUILD_VERSION_PREFIX) \
        else None


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
                                          if sg["name"] in c.get("subgraphs", [])),
                       **({"estimate": sg["estimate"]} if "estimate" in sg else {})}
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
