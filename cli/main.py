"""`neuronx-cc`: the command group. Commands only parse arguments and call the layers below.

Options may stand before the subcommand, as build tools put them (`neuronx-cc --target=trn1
compile ...`): they are moved after it (`global_options.move_after_command`). Commands are
imported when used, so `--version` and a compile-cache hit start quickly.

Exit statuses: 0 success, 2 a bad command line (`NCC_EARG001`: unknown flag, bad value,
missing file...), 1 any other error (compile errors, NEFF and runtime errors), 130
interrupted. Every error is one line on stderr: `ERROR: [CODE] what is wrong`.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading

import click

from nxcc.cli.errors import ARGUMENT_ERROR, INTERRUPTED, fail, one_line, usage_error_line
from nxcc.cli.global_options import move_after_command
from nxcc.version import COMPILER_VERSION

CONTEXT = {"help_option_names": ["-h", "--help"]}

#: command name -> (module, attribute), imported on first use.
COMMANDS = {
    "compile": ("nxcc.cli.compile_cmd", "compile_cmd"),
    "run": ("nxcc.cli.run_cmd", "run_cmd"),
    "inspect-neff": ("nxcc.cli.inspect_cmd", "inspect_neff_cmd"),
    "list-operators": ("nxcc.cli.list_cmd", "list_operators_cmd"),
    "ls": ("nxcc.cli.ls_cmd", "ls_cmd"),
    "cache": ("nxcc.cli.cache_cmd", "cache_cmd"),
    "benchmark": ("nxcc.cli.benchmark_cmd", "benchmark_cmd"),
    "train": ("nxcc.cli.train_cmd", "train_cmd"),
}

VERSION_LINE = f"NeuronX Compiler version {COMPILER_VERSION}"


class LazyGroup(click.Group):
    """A group whose commands are imported when looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.version_option(COMPILER_VERSION, "--version", message=VERSION_LINE)
def cli() -> None:
    """nxcc: an ahead-of-time compiler and runtime playing the part of AWS neuronx-cc."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that every cleanup runs as for Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(f"signal {signum}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: click without its multi-line usage errors. SIGTERM ends a
    command as Ctrl-C does (temporary files removed, cores released, exit 130)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    raw = list(sys.argv[1:] if argv is None else argv)
    args = move_after_command(raw, COMMANDS)
    try:
        cli.main(args=args, prog_name="neuronx-cc", standalone_mode=False, obj={"argv": raw})
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.UsageError as exc:
        click.echo(usage_error_line(exc), err=True)
        sys.exit(ARGUMENT_ERROR)
    except click.Abort:
        fail("interrupted", INTERRUPTED)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(one_line(exc.format_message()), exc.exit_code)


if __name__ == "__main__":
    main()
