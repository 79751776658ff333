"""`neuronx-cc inspect-neff`: what a NEFF holds, for people (text) or programs (--json)."""

from __future__ import annotations

import json

import click

from backend.neff import read_neff
from backend.runtime.model import TensorInfo
from cli.errors import user_errors


def describe(path: str) -> dict:
    """The NEFF at `path` as one JSON-able object."""
    neff = read_neff(path)
    m = neff.manifest
    header = neff.header.to_dict()
    return {
        "file": path,
        "header": header,
        "hash_ok": neff.hash_ok,
        "target": m.get("target"),
        "lnc": m.get("lnc"),
        "inputs": [TensorInfo.from_manifest(e).to_json() for e in m.get("inputs", [])],
        "outputs": [TensorInfo.from_manifest(e).to_json() for e in m.get("outputs", [])],
        "subgraphs": [{"name": sg["name"], "core": sg.get("core"), "ops": sg.get("ops")}
                      for sg in m.get("subgraphs", [])],
        "collectives": m.get("collectives", []),
        "weights": {"files": len(m.get("weights", {}).get("files", {})),
                    "bytes": m.get("weights", {}).get("bytes", 0)},
        "compiler": m.get("compiler", {}),
    }


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
    for kind in ("inputs", "outputs"):
        click.echo(f"{kind}:")
        for t in d[kind]:
            click.echo(f"  {t['name']}: {t['dtype']}{t['shape']}")
    click.echo("subgraphs:")
    for sg in d["subgraphs"]:
        click.echo(f"  {sg['name']} (core {sg['core']}): {sg['ops']} ops")
    click.echo(f"collectives: {len(d['collectives'])}")
    w = d["weights"]
    click.echo(f"weights: {w['files']} files, {w['bytes']} bytes")


@click.command("inspect-neff")
@click.argument("neff", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@user_errors
def inspect_neff_cmd(neff: str, as_json: bool) -> None:
    """Show a NEFF's header, inputs, outputs, subgraphs and weights."""
    d = describe(neff)
    if as_json:
        click.echo(json.dumps(d, indent=2))
    else:
        print_text(d)
