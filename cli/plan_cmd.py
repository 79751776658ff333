"""`neuronx-cc train CONFIG.yaml --plan`: print a layout's plan; exit 0 if it fits, 1 if not.

Planning is `nxcc.plan`'s (`driver.api.plan`); the command prints. `--json` prints one
object (`driver.plan.report.plan_json`), `--trace` and `--hbm-svg` write the step's 1F1B
schedule and the HBM breakdown as pictures, `--search` ranks the model's layouts on
`--nodes` nodes (`driver.plan.search`). A bad file or flag ends in one line, exit status
2, as for `train`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import click

from nxcc.driver.api.plan import layout, load, ranked
from nxcc.driver.api.train import warning_lines
from nxcc.driver.errors import write_error
from nxcc.driver.output import write_bytes_atomically
from nxcc.driver.plan.pictures import hbm_svg, perfetto_trace
from nxcc.driver.plan.report import plan_json, plan_lines
from nxcc.driver.plan.search import search_lines
from nxcc.driver.train.config import TrainConfig

DOES_NOT_FIT = 1


@dataclass(frozen=True)
class PlanFlags:
    instance: str | None
    search: bool
    nodes: int | None
    trace_path: str | None
    svg_path: str | None
    as_json: bool
    quiet: bool


def plan_cmd(config_path: str, overrides: tuple[str, ...], flags: PlanFlags) -> None:
    """Run `--plan` (see the module docstring); exits 1 when the layout does not fit (or,
    with --search, when none does)."""
    config, lnc = load(config_path, overrides)
    if flags.search:
        found = ranked(config, lnc, flags.instance, flags.nodes)
        _warn(config, flags.quiet)
        click.echo(json.dumps(found.to_json(), indent=1) if flags.as_json
                   else "\n".join(search_lines(found)))
        if not found.fitting:
            raise SystemExit(DOES_NOT_FIT)
        return
    plan = layout(config, lnc, flags.instance)
    _warn(config, flags.quiet)
    if flags.trace_path:
        _write(flags.trace_path, json.dumps(perfetto_trace(plan)).encode())
    if flags.svg_path:
        _write(flags.svg_path, hbm_svg(plan).encode())
    click.echo(json.dumps(plan_json(plan), indent=1) if flags.as_json
               else "\n".join(plan_lines(plan)))
    if not plan.fits:
        raise SystemExit(DOES_NOT_FIT)


def _warn(config: TrainConfig, quiet: bool) -> None:
    """The one warning line of the NxD keys nxcc does not act on (after the plan, so that
    an error stays the only line)."""
    if not quiet:
        for line in warning_lines(config):
            click.echo(f"WARNING: {line}", err=True)


def _write(path: str, data: bytes) -> None:
    try:
        write_bytes_atomically(path, data)
    except OSError as exc:
        raise write_error(path, exc) from None
