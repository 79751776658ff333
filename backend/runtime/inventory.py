"""What `neuronx-cc ls` shows: the simulated instance, its devices and cores, who holds them.

`describe_host(config)` returns one JSON-ready dict per instance shown:

- NXCC_INSTANCE_TYPE's instance when set;
- else every instance whose cores some live process holds under the runtime directory;
- else `topology.DEFAULT_INSTANCE`.

The LNC shown is NEURON_LOGICAL_NC_CONFIG when set, else the one the holders use, else the
instance's default. Holders are read from the lock files (`cores.holders`).

Each logical core carries its software id (`software_id`), as the LNC seed names them:
`NC_V3d` for a Trainium2 logical core of two physical NeuronCore-v3 (LNC 2), `NC_V3` for
one (LNC 1); `NC_V2` on trn1 and inf2, whose NeuronCore-v2 are never grouped (neuron-top
shows the same versions: v2, v3, v3d). inf1's is `NC_V1`; trn3's NeuronCore-v4 are named by
analogy (`NC_V4d` at LNC 2, `NC_V4` at LNC 1), which AWS does not publish.
"""

from __future__ import annotations

from collections import Counter

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import Holder, format_cores, holders, lock_dir, resolve_lnc
from nxcc.backend.runtime.topology import DEFAULT_INSTANCE, GB, INSTANCES, Instance


def software_id(inst: Instance, lnc: int) -> str:
    """The software id of `inst`'s logical cores at LNC `lnc` (see the module docstring)."""
    return f"NC_V{inst.generation}" + ("d" if lnc == 2 else "")


def instances_in_use(config: RuntimeConfig) -> list[Instance]:
    """Instances with at least one held core under the runtime directory."""
    found = []
    for inst in INSTANCES.values():
        if lock_dir(config.runtime_dir, inst).is_dir() and holders(config.runtime_dir, inst):
            found.append(inst)
    return found


def describe_host(config: RuntimeConfig) -> list[dict]:
    """One description per instance shown (see the module docstring)."""
    if config.instance_type:
        chosen = [(INSTANCES[config.instance_type], "NXCC_INSTANCE_TYPE")]
    else:
        chosen = [(i, "in use") for i in instances_in_use(config)] or \
                 [(INSTANCES[DEFAULT_INSTANCE], "default")]
    return [describe_instance(config, inst, source) for inst, source in chosen]


def describe_instance(config: RuntimeConfig, inst: Instance, source: str) -> dict:
    held = holders(config.runtime_dir, inst)
    if config.logical_nc_config is not None:
        lnc = resolve_lnc(inst, config.logical_nc_config)
    elif held:
        lnc = Counter(h.lnc for h in held.values()).most_common(1)[0][0]
    else:
        lnc = inst.default_lnc
    devices = []
    for d in range(inst.devices):
        first = d * inst.cores_per_device // lnc
        logical = list(range(first, first + inst.logical_per_device(lnc)))
        cores = []
        for nc in logical:
            owner = next((held[p] for p in inst.physical_of(nc, lnc) if p in held), None)
            cores.append({"nc": nc, "physical": list(inst.physical_of(nc, lnc)),
                          "software_id": software_id(inst, lnc),
                          "pid": owner.pid if owner else None,
                          "command": owner.command if owner else None})
        devices.append({
            "device": d,
            "kind": inst.device_kind,
            "physical_cores": list(range(d * inst.cores_per_device,
                                         (d + 1) * inst.cores_per_device)),
            "logical_cores": logical,
            "memory_bytes": inst.hbm_per_device,
            "memory": f"{inst.hbm_per_device // GB} GB",
            "connected_devices": list(inst.connected(d)),
            "cores": cores,
        })
    return {
        "instance_type": inst.name,
        "instance_source": source,
        "core_kind": inst.core_kind,
        "topology": inst.describe_topology(),
        "lnc": lnc,
        "software_id": software_id(inst, lnc),
        "logical_cores": inst.logical_cores(lnc),
        "physical_cores": inst.physical_cores,
        "runtime_dir": str(lock_dir(config.runtime_dir, inst)),
        "devices": devices,
        "processes": _processes(inst, lnc, held),
    }


def _processes(inst: Instance, lnc: int, held: dict[int, Holder]) -> list[dict]:
    by_pid: dict[int, dict] = {}
    for physical, h in sorted(held.items()):
        entry = by_pid.setdefault(h.pid, {"pid": h.pid, "command": h.command, "cores": [],
                                          "physical_cores": []})
        entry["physical_cores"].append(physical)
        nc = physical // lnc
        if nc not in entry["cores"]:
            entry["cores"].append(nc)
    for entry in by_pid.values():
        entry["cores_text"] = format_cores(entry["cores"])
    return list(by_pid.values())
