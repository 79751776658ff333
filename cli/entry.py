"""The `neuronx-cc` console entry point: a replayed compile-cache hit, else the full CLI.

`cli.replay` serves a command line that already resolved to a cache entry without importing
click or the driver; everything else goes to `cli.main`, imported only then.
"""

from __future__ import annotations

import sys

from nxcc.cli.closed_stdout import end_quietly, is_closed_stdout
from nxcc.cli.replay import replay


def main(argv: list[str] | None = None) -> None:
    """Run `neuronx-cc` with `argv` (default: the process's arguments). A stdout closed by
    its reader ends the command quietly (`cli.closed_stdout`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if replay(args):
            return
        # after the replay: a compile-cache hit loads neither click's commands nor numpy
        from nxcc.cli.main import main as full_command_line

        full_command_line(args)
    except BrokenPipeError as exc:
        if not is_closed_stdout(exc):
            raise
        end_quietly()


if __name__ == "__main__":
    main()
