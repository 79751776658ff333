"""`neuronx-cc inspect-neff`: what a NEFF holds, for people (text), programs (--json) or
pictures (--format dot: the partitioned program as Graphviz text)."""

from __future__ import annotations

import json

import click

from nxcc.backend.neff import read_neff
from nxcc.backend.program.graphviz import neff_to_dot
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.validate import check_neff
from nxcc.cli.errors import user_errors
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


def describe(path: str) -> dict:
    """The NEFF at `path` as one JSON-able object."""
    neff = read_neff(path)
    check_neff(neff)
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
    h = d["header"]
    click.echo(f"NEFF {d['file']}")
    click.echo(f"  name            {h['name']}")
    click.echo(f"  version         {h['neff_version_major']}.{h['neff_version_minor']} "
               f"(package {h['pkg_version']}, built by {h['build_version']})")
    click.echo(f"  uuid            {h['uuid']}")
    click.echo(f"  payload         {h['data_size']} bytes, sha256 {h['hash'][:16]}... "
               f"{'OK' if d['hash_ok'] else 'MISMATCH'}")
    click.echo(f"  feature bits    {h['feature_bits']:#x}")
    click.echo(f"  target          {d['target']}, lnc_size {h['lnc_size']}, "
               f"cores {h['num_tpb']}")
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
    """Show a NEFF's header, inputs, outputs, subgraphs, collectives and weights."""
    if fmt == "dot":
        neff_file = read_neff(neff)
        check_neff(neff_file)
        click.echo(neff_to_dot(neff_file), nl=False)
        return
    d = describe(neff)
    if as_json or fmt == "json":
        click.echo(json.dumps(d, indent=2))
    else:
        print_text(d)
