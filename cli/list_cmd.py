"""`neuronx-cc list-operators`: the operators a frontend supports, one per line."""

from __future__ import annotations

import click

from cli.errors import fail, user_errors


@click.command("list-operators")
@click.option("--framework", required=True, type=click.Choice(["ONNX", "XLA"],
                                                                case_sensitive=False))
@user_errors
def list_operators_cmd(framework: str) -> None:
    """List the operators supported for FRAMEWORK."""
    if framework.upper() == "ONNX":
        from compiler.onnx import SUPPORTED_OPS

        for op in SUPPORTED_OPS:
            click.echo(op)
    else:
        fail("--framework XLA is not supported yet")
