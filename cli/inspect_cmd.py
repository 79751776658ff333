"""`neuronx-cc inspect-neff`: what a NEFF holds (`nxcc.inspect`), for people (text), programs
(--json) or pictures (--format dot: the partitioned program as Graphviz text), whoever built
it.

The payload is surveyed first (`backend.neff.survey`): one built by AWS's compiler is
described from its own members (`backend.neff.neuronx_payload`), one nxcc built is read
and checked as the runtime would. The hash is always computed; a payload that does not
match it is reported (`"hash_ok": false`), and the command then fails (one line, status 1)
when `NEURON_RT_VALIDATE_HASH=true` or when the damage stops the payload from decoding.
"""

from __future__ import annotations

import json
import os

import click

from nxcc.backend.neff import NeffError
from nxcc.backend.program.graphviz import neff_to_dot
from nxcc.backend.runtime.config import parse_bool
from nxcc.cli.errors import user_errors
from nxcc.cli.inspect_view import foreign_dot, print_foreign, print_header
from nxcc.driver.api.inspect import inspect, read_checked

describe = inspect  # the name the command used for it


def estimate_line(estimate: dict, target: object) -> str:
    """The compiler's estimate of a subgraph on its target (`driver.hbm_check`)."""
    peak = estimate.get("peak_hbm_bytes", {})
    limit = estimate.get("hbm_limit_bytes", 0)
    return (f"estimate on {target}: peak HBM {peak.get('total', 0) / 2**20:.3f} MiB of "
            f"{limit / 2**30:g} GiB (weights {peak.get('weights', 0)}, inputs "
            f"{peak.get('inputs', 0)}, arena {peak.get('arena', 0)}, collective buffers "
            f"{peak.get('collective_buffers', 0)} bytes), device time "
            f"{1e6 * float(estimate.get('device_seconds', 0.0)):.3f} us")


def _groups(c: dict) -> str:
    if "source_target_pairs" in c:
        return "pairs " + " ".join(f"{a}->{b}" for a, b in c["source_target_pairs"])
    return "groups " + ",".join("{" + ",".join(map(str, g)) + "}" for g in c["replica_groups"])


def print_text(d: dict) -> None:
    """An nxcc NEFF's sections (after the header's)."""
    h = d["header"]
    print_header(d)
    click.echo(f"  target          {d['target']}, lnc_size {h['lnc_size']}, "
               f"logical cores {h['num_tpb']}")
    kept = {e["input"] for e in d["state"]}
    feeds = {a["input"]: a["output"] for a in d["input_output_alias"]}
    for kind in ("inputs", "outputs"):
        click.echo(f"{kind}:")
        for i, t in enumerate(d[kind]):
            note = ""
            if kind == "inputs" and i in feeds:
                what = "state" if i in kept else "aliased"
                note = f"  ({what}: output {feeds[i]} feeds it next execution)"
            click.echo(f"  {t['name']}: {t['dtype']}{t['shape']}{note}")
    click.echo("subgraphs:")
    for sg in d["subgraphs"]:
        flops = f", {sg['flops']} FLOPs" if sg.get("flops") is not None else ""
        click.echo(f"  {sg['name']} (core {sg['core']}): {sg['ops']} ops{flops}, "
                   f"{sg['collectives']} collectives")
        if isinstance(sg.get("estimate"), dict):
            click.echo(f"    {estimate_line(sg['estimate'], d['target'])}")
    comm = d["communication"]
    click.echo(f"collectives: {comm['collectives']}, {comm['bytes_per_execution']:.0f} bytes "
               "communicated per execution")
    for c in d["collectives"]:
        what = (c["kind"] + (f" {c['reduction']}" if "reduction" in c else "")
                + (" (async start/done)" if c.get("async") else ""))
        click.echo(f"  #{c['id']} {what} {c['dtype']}{c['shape']} {_groups(c)}: "
                   f"{c['bytes']} bytes per rank, {c['traffic_bytes']:.0f} bytes moved")
    if d.get("spmd"):
        print_spmd(d["spmd"])
    w = d["weights"]
    click.echo(f"weights: {w['files']} files, {w['bytes']} bytes")


def print_spmd(spmd: dict) -> None:
    """The SPMD section: the world and each input's and output's global layout."""
    world = spmd.get("world_size")
    click.echo(f"spmd: one program for {world or 'any number of'} ranks "
               f"(num_partitions {spmd['num_partitions']}, replica_count "
               f"{spmd['replica_count']}); run with --world-size {world or 'N'}")
    for kind in ("inputs", "outputs"):
        for t in spmd[kind]:
            layout = t["layout"]["text"] if t.get("layout") else (
                "replicated (none written)" if kind == "inputs" else "none written")
            click.echo(f"  {kind[:-1]} {t['name']}: global {t['shape']}, per rank "
                       f"{t['local_shape']}, sharding {layout}")


@click.command("inspect-neff")
@click.argument("neff", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (--format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot"]), default="text",
              show_default=True,
              help="text for people, json for programs, dot: the partitioned program as a "
              "Graphviz graph, collectives highlighted.")
@user_errors(family="NRT")
def inspect_neff_cmd(neff: str, as_json: bool, fmt: str) -> None:
    """Show a NEFF's header, inputs, outputs, subgraphs, collectives and weights; a NEFF
    AWS's compiler built too (its producer, target, engines' instruction streams,
    constants and hlo_stats)."""
    validate = parse_bool(os.environ, "NEURON_RT_VALIDATE_HASH", False)
    d = inspect(neff)
    if fmt == "dot" and d["producer"] == "nxcc" and d["payload"]["error"] is None:
        click.echo(neff_to_dot(read_checked(neff)), nl=False)
    elif fmt == "dot" and "subgraphs" in d:
        click.echo(foreign_dot(d), nl=False)
    elif as_json or fmt == "json":
        click.echo(json.dumps(d, indent=2))
    elif "runs_here" in d:
        print_foreign(d)
    elif "subgraphs" in d:
        print_text(d)
    else:
        print_header(d)
    _fail_on_damage(d, validate)


def _fail_on_damage(d: dict, validate: bool) -> None:
    """After the report: NeffError for a payload that does not decode, or whose hash does
    not match when NEURON_RT_VALIDATE_HASH=true."""
    h = d["header"]
    if d["payload"]["error"] is not None:
        raise NeffError(d["file"], f"payload damaged: its {h['hash_algorithm']} does not "
                        f"match the header's, and it stops decoding: {d['payload']['error']}")
    if validate and not d["hash_ok"]:
        raise NeffError(d["file"], f"payload hash mismatch: the header's {h['hash_algorithm']} "
                        f"is {h['payload_digest']}, the payload's is not "
                        "(NEURON_RT_VALIDATE_HASH=true)")
