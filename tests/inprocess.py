"""Running `neuronx-cc` inside the test process (as `nxcc.cli.main.main(argv)` runs it):
its exit status, stdout, stderr, and any exception that escaped (a crash)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

from nxcc.cli.main import main


@dataclass(frozen=True)
class Outcome:
    """How one command ended; `crash` is an exception the command let escape."""

    status: int
    stdout: str
    stderr: str
    crash: BaseException | None = None

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("ERROR: ")]


def run_cli(*argv: str) -> Outcome:
    """Run `neuronx-cc ARGV` in this process. Exceptions derived from Exception escaping the
    command are returned as `crash`; BaseExceptions other than SystemExit propagate (so a
    harness's own timeout gets through)."""
    out, err = io.StringIO(), io.StringIO()
    status, crash = 0, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # a crash: what the tests and the fuzzer look for
            status, crash = 1, exc
    return Outcome(status, out.getvalue(), err.getvalue(), crash)


def assert_clean_error(outcome: Outcome, *fragments: str) -> str:
    """The command failed with a non-zero status and one `ERROR: [CODE] ...` line holding
    every fragment, and no traceback."""
    assert outcome.crash is None, repr(outcome.crash)
    assert outcome.status != 0, outcome.stdout
    assert "Traceback" not in outcome.stderr, outcome.stderr
    lines = outcome.error_lines
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("ERROR: ["), lines[0]
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]
