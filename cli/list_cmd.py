"""`neuronx-cc list-operators`: the operators a frontend supports, one per line."""

from __future__ import annotations

import click

from nxcc.cli.errors import user_errors


@click.command("list-operators")
@click.option("--framework", required=True, type=click.Choice(["ONNX", "XLA"],
                                                                case_sensitive=False))
@user_errors
def list_operators_cmd(framework: str) -> None:
    """List the operators supported for FRAMEWORK."""
    if framework.upper() == "ONNX":
        # the frontends (onnx, numpy) only for this command, not at every command's start
        from nxcc.compiler.onnx import SUPPORTED_OPS

        for op in SUPPORTED_OPS:
            click.echo(op)
    else:
        from nxcc.compiler.hlo import SUPPORTED_OPCODES

        for op in SUPPORTED_OPCODES:
            click.echo(op)
