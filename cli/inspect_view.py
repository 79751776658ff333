"""How `inspect-neff` shows what every NEFF has (its header) and what a NEFF the real
compiler built holds (text and Graphviz); nxcc's own sections are in `inspect_cmd`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

#: Text listings longer than this end in "... and N more" (--json lists everything).
SHOWN = 20


def print_header(d: Mapping[str, Any]) -> None:
    """The file's first lines: producer, and every header field by name."""
    h = d["header"]
    who = d.get("producer") or "an unknown producer"
    version = d.get("tool_version")
    click.echo(f"NEFF {d['file']}")
    click.echo(f"  producer        {who}{' ' + version if version else ''}")
    state = "OK" if d["hash_ok"] else "MISMATCH"
    click.echo(f"  payload         {h['data_size']} bytes, "
               f"{'gzip' if d['payload']['compressed'] else 'plain'} tar, "
               f"{h['hash_algorithm']} {h['payload_digest']} {state}")
    if d["payload"]["error"]:
        click.echo(f"  damaged         {d['payload']['error']}")
    click.echo("header:")
    for key, value in h.items():
        if key == "feature_bits":
            value = f"{value:#x}"
        click.echo(f"  {key:<20}{value if value != '' else '(empty)'}")


def _tensor(t: Mapping[str, Any]) -> str:
    shape = t.get("shape")
    return f"{t['name']}: {t.get('dtype') or '?'}{shape if shape is not None else '[?]'}"


def print_foreign(d: Mapping[str, Any]) -> None:
    """The sections of a NEFF the real compiler built."""
    print_header(d)
    code = d.get("target_code_name")
    target = d.get("target") or "unknown"
    detail = ", ".join(x for x in (f"code name {code}" if code else "", d.get("neuron_core")
                                   or "", "/".join(d.get("instance_families", []))) if x)
    click.echo(f"target: {target}{f' ({detail})' if detail else ''}, LNC {d['lnc']}")
    for kind in ("inputs", "outputs"):
        click.echo(f"{kind}:")
        for t in d[kind]:
            click.echo(f"  {_tensor(t)}")
    click.echo(f"subgraphs: {len(d['subgraphs'])}")
    for sg in d["subgraphs"]:
        variables = ", ".join(f"{k} {v}" for k, v in sg["variables"].items())
        features = f"; features {', '.join(sg['features'])}" if sg["features"] else ""
        click.echo(f"  {sg['name']} ({sg['definition']}): variables {variables or 'none'}"
                   f"{features}")
        for e in sg["engines"]:
            count = (f", {e['instructions']} instructions" if e["instructions"] is not None
                     else "")
            click.echo(f"    {e['engine']:<12}{e['bytes']} bytes{count} ({e['program']})")
    c = d["constants"]
    click.echo(f"constants: {c['count']} files, {c['bytes']} bytes")
    for f in c["files"][:SHOWN]:
        kind = f"{f['dtype']}{f['shape']}, " if f.get("dtype") else ""
        click.echo(f"  {f['name']}: {kind}{f['bytes']} bytes")
    _more(len(c["files"]))
    if d.get("hlo_stats") is not None:
        click.echo("hlo_stats.json:")
        stats = d["hlo_stats"]
        for key, value in (stats.items() if isinstance(stats, dict) else [("value", stats)]):
            click.echo(f"  {key:<26}{value}")
    metrics = d.get("metrics")
    if isinstance(metrics, list):
        click.echo("metrics.json:")
        for entry in metrics:
            if isinstance(entry, dict):
                click.echo(f"  {entry.get('MetricName', '?'):<26}{entry.get('Value')} "
                           f"{entry.get('Unit', '')}".rstrip())
    m = d["members"]
    click.echo(f"members: {m['count']} files, {m['bytes']} bytes; not understood: "
               f"{len(m['unknown']) or 'none'}")
    for name in m["unknown"][:SHOWN]:
        click.echo(f"  {name}")
    _more(len(m["unknown"]))
    click.echo(f"runs here: no ({d['why']})")


def _more(count: int) -> None:
    if count > SHOWN:
        click.echo(f"  ... and {count - SHOWN} more (--json lists them all)")


def foreign_dot(d: Mapping[str, Any]) -> str:
    """Graphviz text of a real compiler's NEFF: its inputs, one cluster per subgraph
    listing the engines' instruction streams, its outputs."""
    q = json.dumps
    lines = [f"digraph {q(d['header']['name'] or 'neff')} {{", "  rankdir=LR;",
             '  node [shape=box, fontname="Helvetica", fontsize=10];']
    for i, t in enumerate(d["inputs"]):
        lines.append(f"  in{i} [label={q(_tensor(t))}, shape=ellipse];")
    for i, t in enumerate(d["outputs"]):
        lines.append(f"  out{i} [label={q(_tensor(t))}, shape=ellipse];")
    for k, sg in enumerate(d["subgraphs"]):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f"    label={q(sg['name'] + ' (' + str(d.get('target') or '?') + ')')};")
        for e in sg["engines"]:
            count = f"\n{e['instructions']} instructions" if e["instructions"] is not None \
                else ""
            lines.append(f"    sg{k}_{e['engine']} [label={q(e['engine'] + count)}];")
        lines.append(f"    sg{k} [label={q(sg['name'])}, shape=point];")
        lines.append("  }")
        for i in range(len(d["inputs"])):
            lines.append(f"  in{i} -> sg{k};")
        for i in range(len(d["outputs"])):
            lines.append(f"  sg{k} -> out{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"
