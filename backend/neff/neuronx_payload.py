"""What the payload of a NEFF built by AWS's compiler (neuronx-cc) says, from a `Survey`.

The real tool's payload (docs/neff-format.md lists it) holds `neff.json` (a TVM-graph JSON:
`nodes`, `arg_nodes`, `heads`, `attrs.shape`/`dltype`, `node_row_ptr`, and the inputs'
and outputs' signatures under `metadata.signatures`), `info.json` (`tool_version`,
`num_tpb`...), one `kelf-N.json` per group of subgraphs (the target's code name and the
subgraphs' `sgNN/def.json`), `hlo_stats.json`, `debug_info/`, and per subgraph its
definition (`def.json`: the engines' instruction streams, the variables, the features),
`tensor_map.json`, one instruction stream per engine (`PE`, `Activation`, `DVE`, `Pool`,
`SP`) and its constants (`.npy`, or `.bin` files a variable of type `file` names); older
releases add `metrics.json` (the compiler's estimates: `MetricName`, `Value`, `Unit`).

`describe(survey)` turns that into one JSON-ready dict; every optional member may be
missing (a NEFF stripped of its debug info has no instruction counts; one without
`neff.json` takes its inputs and outputs from the tensor maps). What is not understood is
listed under `members.unknown`, never refused; what contradicts itself (a definition, an
instruction stream or a tensor the payload names but does not hold) is refused in one line.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from nxcc.backend.neff.constants import MANIFEST_NAME
from nxcc.backend.neff.errors import NeffError
from nxcc.backend.neff.json_schema import load_json
from nxcc.backend.neff.protowire import count_field
from nxcc.backend.neff.survey import Survey
from nxcc.backend.neff.tvm_graph import graph_signature

PRODUCER = "neuronx-cc"

#: Target code names (kelf's "target") -> (family given to --target, NeuronCore version,
#: the instance families that core serves).
CODE_NAMES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "inferentia": ("inf1", "NeuronCore-v1", ("inf1",)),
    "tonga": ("inf1", "NeuronCore-v1", ("inf1",)),
    "sunda": ("trn1", "NeuronCore-v2", ("trn1", "trn1n", "inf2")),
    "cayman": ("trn2", "NeuronCore-v3", ("trn2",)),
    "mariana": ("trn3", "NeuronCore-v4", ("trn3",)),
    "core_v4": ("trn3", "NeuronCore-v4", ("trn3",)),
}
_FAMILIES = {"inf1": "inferentia", "trn1": "sunda", "trn1n": "sunda", "inf2": "sunda",
             "trn2": "cayman", "trn3": "mariana"}
for _family, _code in _FAMILIES.items():  # a target written by its family name
    CODE_NAMES.setdefault(_family, (_family, *CODE_NAMES[_code][1:]))

#: Engine keys of `def.json` (`<key>_instr`) -> the engine's name in the payload.
ENGINES = {"pe": "PE", "act": "Activation", "pool": "Pool", "sp": "SP", "dve": "DVE"}
#: Members every real payload may hold beside the ones its JSON names.
KNOWN_TOP = frozenset({MANIFEST_NAME, "info.json", "hlo_stats.json", "metrics.json",
                       "hlo_metrics.json", "global_metric_store.json", "loop.json",
                       "kernel_debug_info.json", "ucode_lib.json", "icMetadata.json",
                       "cpu.so", "cpu.params"})
KNOWN_PER_SUBGRAPH = frozenset({"def.json", "tensor_map.json", "act_info.json"})
_KELF = re.compile(r"^kelf-(\d+)\.json$")
_SUBGRAPH_DEF = re.compile(r"^(?:.*/)?(sg[^/]*)/def\.json$")
#: The asm debug info's field holding one record per instruction, in binary order.
_ASM_RECORD_FIELD = 3


def is_real_payload(survey: Survey) -> bool:
    """Whether the payload is laid out as the real compiler lays it out."""
    if "info.json" in survey.members or any(_KELF.match(m) for m in survey.members):
        return True
    graph = _json(survey, MANIFEST_NAME, required=False)
    return isinstance(graph, dict) and "nodes" in graph


def describe(survey: Survey) -> dict[str, Any]:
    """The payload's contents as one JSON-ready dict (see the module docstring)."""
    info = _json(survey, "info.json", required=False)
    info = info if isinstance(info, dict) else None
    kelfs = _kelfs(survey)
    code_name = next((k["target"] for k in kelfs.values() if isinstance(k.get("target"), str)),
                     None)
    family, core, instances = CODE_NAMES.get(str(code_name).lower(), (None, None, ()))
    subgraphs = [_subgraph(survey, name, definition)
                 for name, definition in _definitions(survey, kelfs)]
    inputs, outputs = _signature(survey, subgraphs)
    version = info.get("tool_version") if info else None
    return {
        "producer": PRODUCER,
        "tool_version": version if isinstance(version, str) else None,
        "target": family,
        "target_code_name": code_name,
        "neuron_core": core,
        "instance_families": list(instances),
        "lnc": survey.header.lnc,
        "inputs": inputs,
        "outputs": outputs,
        "subgraphs": subgraphs,
        "constants": _constants(survey, subgraphs),
        "hlo_stats": _json(survey, "hlo_stats.json", required=False),
        "metrics": _json(survey, "metrics.json", required=False),
        "info": info,
        "members": _members(survey),
    }


def summary(d: Mapping[str, Any]) -> str:
    """`neuronx-cc 2.23.6484.0 for trn2 (LNC 2)`: who built the NEFF, for what."""
    version = d.get("tool_version")
    who = f"{d['producer']} {str(version).split('+')[0]}" if version else (
        f"{d['producer']} (version not recorded)")
    if d.get("target"):
        what = d["target"]
    elif d.get("target_code_name"):
        what = f"target {d['target_code_name']!r}"
    else:
        what = "an unrecorded target"
    return f"{who} for {what} (LNC {d['lnc']})"


# --- members ------------------------------------------------------------------------


def _json(survey: Survey, member: str, *, required: bool) -> Any:
    raw = survey.texts.get(member)
    if raw is None:
        if required and member in survey.members:
            raise NeffError(survey.path, f"{member} is {survey.members[member]} bytes, too "
                            "large to read")
        if required:
            raise NeffError(survey.path, f"the payload names {member} but does not hold it")
        return None
    return load_json(raw, survey.path, member)


def _kelfs(survey: Survey) -> dict[str, dict[str, Any]]:
    found = sorted((int(m.group(1)), name) for name in survey.members
                   if (m := _KELF.match(name)))
    kelfs = {}
    for _, name in found:
        kelf = _json(survey, name, required=True)
        if not isinstance(kelf, dict):
            raise NeffError(survey.path, f"{name} must hold a JSON object")
        kelfs[name] = kelf
    return kelfs


def _definitions(survey: Survey, kelfs: Mapping[str, dict[str, Any]]
                 ) -> Iterator[tuple[str, str]]:
    """(subgraph name, its def.json member) for each subgraph the kelfs name, or for each
    `sgNN/def.json` the payload holds when it has no kelf."""
    if not kelfs:
        for member in survey.members:
            if (m := _SUBGRAPH_DEF.match(member)):
                yield m.group(1), member
        return
    for kelf_name, kelf in kelfs.items():
        graphs = kelf.get("graphs", [])
        if not isinstance(graphs, list):
            raise NeffError(survey.path, f"{kelf_name}: 'graphs' must be a list")
        for i, graph in enumerate(graphs):
            definition = graph.get("definition") if isinstance(graph, dict) else None
            if not isinstance(definition, str):
                raise NeffError(survey.path, f"{kelf_name}: graphs[{i}] names no definition")
            if definition not in survey.members:
                raise NeffError(survey.path, f"{kelf_name} names {definition}, which the "
                                "payload does not hold")
            name = graph.get("name")
            yield (name if isinstance(name, str) else posixpath.dirname(definition)), \
                definition


def _subgraph(survey: Survey, name: str, definition: str) -> dict[str, Any]:
    folder = posixpath.dirname(definition)
    d = _json(survey, definition, required=True)
    if not isinstance(d, dict):
        raise NeffError(survey.path, f"{definition} must hold a JSON object")
    engines = []
    for key, value in d.items():
        if not (key.endswith("_instr") and isinstance(value, str)):
            continue
        engine = key[: -len("_instr")]
        program = posixpath.join(folder, value)
        if program not in survey.members:
            raise NeffError(survey.path, f"{definition} names the {engine} instruction "
                            f"stream {value}, which the payload does not hold")
        engines.append({"engine": ENGINES.get(engine, engine), "program": program,
                        "bytes": survey.members[program],
                        "instructions": _instruction_count(survey, folder,
                                                           d.get(f"{engine}_asm_dbg"))})
    variables: dict[str, int] = {}
    var = d.get("var")
    if not isinstance(var, dict):
        var = {}
    for entry in var.values():
        kind = entry.get("type") if isinstance(entry, dict) else None
        variables[str(kind)] = variables.get(str(kind), 0) + 1
    features = d.get("neff_features")
    return {"name": name, "definition": definition, "engines": engines,
            "variables": dict(sorted(variables.items())),
            "features": [f for f in features if isinstance(f, str)]
            if isinstance(features, list) else [],
            "_files": [posixpath.join(folder, e["file_name"]) for e in var.values()
                       if isinstance(e, dict) and e.get("type") == "file"
                       and isinstance(e.get("file_name"), str)]}


def _instruction_count(survey: Survey, folder: str, asm_debug: object) -> int | None:
    """Instructions in an engine's stream: the records of its assembly debug info (one per
    instruction, in the binary's order), when the NEFF carries it."""
    names = asm_debug if isinstance(asm_debug, list) else [asm_debug]
    for name in names:
        if isinstance(name, str):
            raw = survey.texts.get(posixpath.join(folder, name))
            if raw is not None:
                return count_field(raw, _ASM_RECORD_FIELD)
    return None


def _constants(survey: Survey, subgraphs: list[dict[str, Any]]) -> dict[str, Any]:
    files = [m for m in survey.members if m.endswith(".npy")]
    for sg in subgraphs:
        files += [f for f in sg.pop("_files") if f not in files]
    listed = []
    for name in files:
        if name not in survey.members:
            raise NeffError(survey.path, f"a variable names the constant {name}, which the "
                            "payload does not hold")
        npy = survey.npy.get(name)
        listed.append({"name": name, "bytes": survey.members[name],
                       "dtype": npy.dtype if npy else None,
                       "shape": list(npy.shape) if npy else None})
    return {"count": len(listed), "bytes": sum(c["bytes"] for c in listed), "files": listed}


def _members(survey: Survey) -> dict[str, Any]:
    named: set[str] = set()
    for raw_name in survey.texts:
        if raw_name.endswith(".json"):
            named.update(_strings(load_json(survey.texts[raw_name], survey.path, raw_name)))
    unknown = [m for m in survey.members if not _known(m, named)]
    return {"count": len(survey.members), "bytes": sum(survey.members.values()),
            "unknown": unknown, "not_files": list(survey.others)}


def _known(member: str, named: set[str]) -> bool:
    base = posixpath.basename(member)
    return (member in KNOWN_TOP or bool(_KELF.match(member)) or member in named
            or base in named or base in KNOWN_PER_SUBGRAPH or member.endswith(".npy")
            or member.startswith("debug_info/") or base.startswith("debug_info"))


def _strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# --- inputs and outputs -------------------------------------------------------------


def _signature(survey: Survey, subgraphs: list[dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    graph = _json(survey, MANIFEST_NAME, required=False)
    if isinstance(graph, dict) and "nodes" in graph:
        return graph_signature(graph, survey.path)
    return _tensor_map_signature(survey, subgraphs)


def _tensor_map_signature(survey: Survey, subgraphs: list[dict[str, Any]]
                          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Inputs and outputs from the first subgraph's tensor map (a NEFF without neff.json)."""
    for sg in subgraphs:
        member = posixpath.join(posixpath.dirname(sg["definition"]), "tensor_map.json")
        tmap = _json(survey, member, required=False)
        if not isinstance(tmap, dict):
            continue
        found: dict[str, list[dict[str, Any]]] = {"input": [], "output": []}
        for name, entry in tmap.items():
            if isinstance(entry, dict) and entry.get("kind") in found:
                shape = entry.get("tf_shape", entry.get("sim_shape"))
                found[entry["kind"]].append({"name": name, "dtype": entry.get("dtype"),
                                             "shape": shape})
        return found["input"], found["output"]
    return [], []
