"""A rank's bad command line (a click.UsageError raised inside its work, e.g. `mpiexec -n 2
neuronx-cc run` of a NEFF that is no SPMD program) ends in the command line's own one
error line and exit status 2, not a traceback."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO

CHILD = """
import click
from nxcc.cli.rank_process import run_rank

def work():
    raise click.UsageError("m.neff is not an SPMD program; mpiexec runs one program as ranks")

run_rank(work)
"""


def test_a_usage_error_of_a_rank_is_one_line_and_status_2() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "ERROR: [NCC_EARG001] m.neff is not an SPMD program; mpiexec runs one program as "
        "ranks"]
