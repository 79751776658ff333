"""`neuronx-cc ls [--json]`: the simulated instance in the manner of `neuron-ls`.

Shows each device with its NeuronCores, the logical cores under the current LNC (and their
software id: NC_V3d, NC_V3, NC_V2...), its memory and connected devices, and which process
(pid, command) holds which core.
"""

from __future__ import annotations

import json

import click

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.inventory import describe_host
from nxcc.cli.errors import user_errors

HEADERS = (("NEURON", "DEVICE"), ("NEURON", "CORES"), ("LOGICAL", "NC"), ("NEURON", "MEMORY"),
           ("CONNECTED", "DEVICES"), ("PID", ""))


def _table(headers: tuple[tuple[str, ...], ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(x) for x in [*h, *(r[i] for r in rows)]) for i, h in enumerate(headers)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [rule]
    for line in range(len(headers[0])):
        out.append("| " + " | ".join(h[line].ljust(w) for h, w in zip(headers, widths,
                                                                       strict=True)) + " |")
    out.append(rule)
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows]
    out.append(rule)
    return out


def _span(values: list[int]) -> str:
    if not values:
        return "-"
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def render(desc: dict) -> list[str]:
    """The text form of one instance description."""
    lines = [
        f"instance-type: {desc['instance_type']} ({desc['instance_source']})",
        f"topology: {desc['topology']}, {desc['core_kind']}",
        f"logical-nc-config: {desc['lnc']} ({desc['logical_cores']} logical NeuronCores "
        f"{desc['software_id']}, {desc['physical_cores']} physical)",
        f"runtime-dir: {desc['runtime_dir']}",
    ]
    rows: list[tuple[str, ...]] = []
    for d in desc["devices"]:
        pids = sorted({c["pid"] for c in d["cores"] if c["pid"] is not None})
        rows.append((str(d["device"]), str(len(d["physical_cores"])), _span(d["logical_cores"]),
                     d["memory"], ", ".join(str(x) for x in d["connected_devices"]) or "-",
                     ", ".join(str(p) for p in pids) or "-"))
    lines += _table(HEADERS, rows)
    if desc["processes"]:
        lines.append("NEURON PROCESSES")
        lines += _table((("NC",), ("PID",), ("COMMAND",)),
                        [(p["cores_text"], str(p["pid"]), p["command"] or "?")
                         for p in desc["processes"]])
    else:
        lines.append("no process holds a NeuronCore")
    return lines


@click.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@user_errors(family="NRT")
def ls_cmd(as_json: bool) -> None:
    """List the simulated instance's devices, NeuronCores and the processes holding them.

    The instance is NXCC_INSTANCE_TYPE, else the ones in use under the runtime directory
    (NXCC_RUNTIME_DIR), else trn1.32xlarge. --json prints a list with one object per instance.
    """
    descriptions = describe_host(RuntimeConfig.from_env())
    if as_json:
        click.echo(json.dumps(descriptions, indent=2))
        return
    for i, desc in enumerate(descriptions):
        if i:
            click.echo("")
        click.echo("\n".join(render(desc)))
