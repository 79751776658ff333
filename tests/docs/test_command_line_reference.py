"""docs/command-line.md lists every command and every flag the `--help` texts list, and
nothing they do not.

The page has a section per command, headed by the command in backticks (`## \\`neuronx-cc
compile\\``, `### \\`neuronx-cc cache list\\``; deeper headings stay in the section); the
first column of its tables names each flag in backticks, every spelling (`-o`,
`--output`). Each flag of the command's `--help` must be in that column; each flag of the
column must be in the command's `--help` text (the options, or flags its description names,
such as compile's `--pipeline`).
"""

from __future__ import annotations

import re

import click
import pytest

from nxcc.cli.main import cli
from tests.docs.blocks import REPO

PAGE = REPO / "docs" / "command-line.md"
_HEADING = re.compile(r"^#{2,4} `(neuronx-cc[^`]*)`\s*$")
_FLAG = re.compile(r"`(-{1,2}[A-Za-z0-9][A-Za-z0-9_*-]*)")


def commands() -> dict[str, click.Command]:
    """Every command and subcommand of `neuronx-cc`, by its full name."""
    found: dict[str, click.Command] = {}

    def walk(name: str, command: click.Command, ctx: click.Context) -> None:
        found[name] = command
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                child = command.get_command(ctx, sub)
                assert child is not None
                walk(f"{name} {sub}", child, click.Context(child, parent=ctx, info_name=sub))

    walk("neuronx-cc", cli, click.Context(cli, info_name="neuronx-cc"))
    return found


def help_flags(command: click.Command) -> set[str]:
    """The flags `--help` lists for `command` (every spelling; help itself aside)."""
    flags: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            flags.update(param.opts)
            flags.update(param.secondary_opts)
    return flags - {"-h", "--help"}


def help_text(command: click.Command) -> str:
    """The description `--help` shows (unwrapped)."""
    return f"{command.help or ''}\n{command.epilog or ''}"


def sections() -> dict[str, list[str]]:
    """The page's lines under each command heading, down to the next heading of its level
    or higher (deeper headings stay in the section)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    level = 0
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        depth = len(line) - len(line.lstrip("#")) if line.startswith("#") else 0
        m = _HEADING.match(line)
        if m:
            current, level = " ".join(m[1].split()), depth
            out[current] = []
        elif depth and depth <= level:
            current, level = None, 0
        elif current is not None:
            out[current].append(line)
    return out


def table_flags(lines: list[str]) -> set[str]:
    """The flags named in the first column of the section's table rows."""
    flags: set[str] = set()
    for line in lines:
        if line.startswith("|") and not set(line) <= set("|-: "):
            flags.update(_FLAG.findall(line.split("|")[1]))
    return flags


COMMANDS = commands()


def test_every_command_has_a_section() -> None:
    missing = sorted(set(COMMANDS) - set(sections()))
    assert not missing, f"docs/command-line.md has no section for {missing}"


def test_every_section_is_a_command() -> None:
    stale = sorted(set(sections()) - set(COMMANDS))
    assert not stale, f"docs/command-line.md documents commands that do not exist: {stale}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_section_lists_every_flag_of_the_help(name: str) -> None:
    documented = table_flags(sections().get(name, []))
    missing = sorted(help_flags(COMMANDS[name]) - documented)
    assert not missing, f"`{name} --help` lists {missing}, its section's table does not"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_section_lists_only_flags_of_the_help(name: str) -> None:
    text = help_text(COMMANDS[name])
    unknown = sorted(f for f in table_flags(sections().get(name, []))
                     if f not in help_flags(COMMANDS[name]) and f not in text)
    assert not unknown, f"the section of `{name}` lists {unknown}, which its --help does not"
