"""`neuronx-cc`: the command group. Commands only parse arguments and call the layers below.

Usage errors (a bad flag or value) are one line too: `ERROR: [NCC_EARG001] ...`, exit 2.
"""

from __future__ import annotations

import sys

import click

from nxcc.cli.benchmark_cmd import benchmark_cmd
from nxcc.cli.compile_cmd import compile_cmd
from nxcc.cli.errors import one_line
from nxcc.cli.inspect_cmd import inspect_neff_cmd
from nxcc.cli.list_cmd import list_operators_cmd
from nxcc.cli.ls_cmd import ls_cmd
from nxcc.cli.run_cmd import run_cmd
from nxcc.cli.version import VERSION

CONTEXT = {"help_option_names": ["-h", "--help"]}


@click.group(context_settings=CONTEXT)
@click.version_option(VERSION, "--version", prog_name="neuronx-cc (nxcc)",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """nxcc: an ahead-of-time compiler and runtime playing the part of AWS neuronx-cc."""


cli.add_command(compile_cmd)
cli.add_command(run_cmd)
cli.add_command(inspect_neff_cmd)
cli.add_command(list_operators_cmd)
cli.add_command(ls_cmd)
cli.add_command(benchmark_cmd)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: click without its multi-line usage errors."""
    try:
        cli.main(args=argv, prog_name="neuronx-cc", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.UsageError as exc:
        where = f" (see neuronx-cc {exc.ctx.info_name} --help)" if exc.ctx else ""
        if exc.ctx and exc.ctx.info_name == "neuronx-cc":
            where = " (see neuronx-cc --help)"
        click.echo(f"ERROR: [NCC_EARG001] {one_line(exc.format_message())}{where}", err=True)
        sys.exit(2)
    except click.Abort:
        click.echo("ERROR: interrupted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"ERROR: {one_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
