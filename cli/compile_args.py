"""The parts of `neuronx-cc compile`'s command line that click cannot declare.

- `--pipeline STAGE...` takes several words (`--pipeline compile SaveTemps model.hlo.pb`):
  it takes the words that follow while they look like stage names (letters, digits and
  `_`, no dot: a model path has an extension), and refuses unknown stages.
- The flags the real tool accepts for its own internals (`--internal-*`, `--no-internal-*`,
  `--enable-internal-*`, `--tensorizer-options`, `--hbm-scratchpad-page-size`...) are
  accepted and recorded (in the NEFF manifest, and so in the cache key) but change nothing
  on a simulated core. Those in `RECORDED_WITH_VALUE` take the next word as their value;
  any other is a switch unless written `--flag=value`.

`CompileCommand` takes both out of the arguments before click parses the rest and leaves
them in `ctx.meta` (`PIPELINE_META`, `RECORDED_META`).
"""

from __future__ import annotations

import re

import click

from nxcc.driver.api.flags import PIPELINE_STAGES
from nxcc.driver.recorded_flags import RECORDED_WITH_VALUE, is_recorded_flag, takes_value

__all__ = ["RECORDED_WITH_VALUE", "CompileCommand", "is_recorded_flag", "split_compile_args",
           "takes_value"]

PIPELINE_META = "nxcc.pipeline"
RECORDED_META = "nxcc.recorded_flags"

_STAGE_WORD = re.compile(r"^[A-Za-z]\w*$")


Recorded = list[tuple[str, str | None]]


def split_compile_args(args: list[str]) -> tuple[list[str], list[str], Recorded]:
    """(arguments for click, pipeline stages, recorded flags as (name, value))."""
    rest: list[str] = []
    stages: list[str] = []
    recorded: Recorded = []
    i = 0
    while i < len(args):
        token = args[i]
        name, eq, value = token.partition("=")
        i += 1
        if token == "--":
            rest += args[i - 1:]
            break
        if name == "--pipeline":
            words = [value] if eq else []
            while not eq and i < len(args) and _STAGE_WORD.match(args[i]):
                words.append(args[i])
                i += 1
            stages += [_stage(w) for w in words] or [_stage("")]
        elif is_recorded_flag(name):
            if not eq and takes_value(name):
                if i >= len(args):
                    raise click.UsageError(f"Option '{name}' requires an argument.")
                value, i = args[i], i + 1
            recorded.append((name, value if eq or takes_value(name) else None))
        else:
            rest.append(token)
    return rest, stages, recorded


def _stage(word: str) -> str:
    stage = PIPELINE_STAGES.get(word.lower())
    if stage is None:
        raise click.UsageError(f"--pipeline {word!r}: stages are "
                               f"{', '.join(PIPELINE_STAGES.values())}")
    return stage


class CompileCommand(click.Command):
    """A click command that first takes `--pipeline` and the recorded flags out."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest, stages, recorded = split_compile_args(list(args))
        ctx.meta[PIPELINE_META] = stages
        ctx.meta[RECORDED_META] = recorded
        return super().parse_args(ctx, rest)
