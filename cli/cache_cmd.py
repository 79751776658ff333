"""`neuronx-cc cache list|stats|clean`: the compile cache's entries, totals, and removal."""

from __future__ import annotations

import datetime
import json

import click

from nxcc.cli.errors import user_errors
from nxcc.driver.cache.layout import cache_location
from nxcc.driver.cache.store import CompileCache

CACHE_DIR = click.option("--cache-dir", "--cache_dir", "cache_dir",
                         help="Cache root (default: NEURON_COMPILE_CACHE_URL, else "
                         "/var/tmp/neuron-compile-cache; a remote URL is warned about and the "
                         "local default used).")
ALL_VERSIONS = click.option("--all-versions", is_flag=True,
                            help="Every compiler version's entries, not only this one's.")


@click.group("cache")
def cache_cmd() -> None:
    """Inspect or clean the compile cache."""


def _open(cache_dir: str | None) -> CompileCache:
    """The cache the command looks at; a remote URL's warning on stderr (once)."""
    root, note = cache_location(cache_dir)
    if note:
        click.echo(f"WARNING: {note}", err=True)
    return CompileCache(root)


def _describe(entry) -> dict:
    meta = entry.meta
    return {"entry": entry.name, "version": meta.get("compiler_version"),
            "status": meta.get("status"), "error_code": meta.get("error_code"),
            "neff_bytes": meta.get("neff_bytes"), "bytes": entry.size(),
            "created": meta.get("created"), "path": entry.path}


@cache_cmd.command("list")
@CACHE_DIR
@ALL_VERSIONS
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@user_errors
def cache_list(cache_dir: str | None, all_versions: bool, as_json: bool) -> None:
    """One line per entry: name, status, size, when it was written."""
    cache = _open(cache_dir)
    rows = [_describe(e) for e in cache.entries(all_versions)]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        when = datetime.datetime.fromtimestamp(r["created"] or 0).strftime("%Y-%m-%d %H:%M:%S")
        status = "ok" if r["status"] == "ok" else f"failed {r['error_code']}"
        click.echo(f"{r['entry']}  {status:<18} {r['bytes']:>10} B  {when}  {r['version']}")


@cache_cmd.command("stats")
@CACHE_DIR
@ALL_VERSIONS
@user_errors
def cache_stats(cache_dir: str | None, all_versions: bool) -> None:
    """Where the cache is, how many entries (compiled, failed) and their size."""
    cache = _open(cache_dir)
    entries = cache.entries(all_versions)
    failed = sum(1 for e in entries if e.failed)
    click.echo(f"cache: {cache.root}")
    click.echo(f"version dir: {cache.version_dir}")
    click.echo(f"entries: {len(entries)} ({len(entries) - failed} compiled, {failed} failed)")
    click.echo(f"bytes: {sum(e.size() for e in entries)}")


@cache_cmd.command("clean")
@CACHE_DIR
@ALL_VERSIONS
@click.option("--failed-only", is_flag=True, help="Remove only remembered failures.")
@user_errors
def cache_clean(cache_dir: str | None, all_versions: bool, failed_only: bool) -> None:
    """Remove entries (and what killed compiles left behind)."""
    cache = _open(cache_dir)
    count, freed = cache.clean(failed_only=failed_only, all_versions=all_versions)
    click.echo(f"removed {count} entries, {freed} bytes")
