"""nxcc's errors: every code it reports, defined once with its meaning, and the one exception
family that carries them.

A refusal of a user's input, file, flag or environment is an `Error` carrying `code`, one of
the codes below: the compiler's `NCC_*` (the real neuronx-cc's diagnostics) and the runtime's
`NRT_*` (libnrt's status names, and the NEFF validation codes). The command line prints
`ERROR: [CODE] message` (`Error.report()`) and exits with the code's `exit_status`; Python
callers catch `nxcc.Error` or a subclass:

    Error                       .code, .exit_status, .report()
    +-- CompileError            NCC_*: the compiler refused the model, a flag, a training setup
    |   +-- FrontendError, HloError (nxcc.compiler), TrainConfigError, CheckpointError
    +-- NrtError                NRT_<status>: the runtime refused a load or an execution
    |   +-- ConfigError         a NEURON_RT_* variable (nxcc.backend.runtime.config)
    +-- NeffError               NRT_INVALID / NRT_ENEFF00x: a NEFF that cannot be read

This module imports no layer of nxcc (an import-linter contract keeps it so), so every
layer may import it. `python -m nxcc.errors` prints the catalogue as the page
docs/error-codes.md (a test keeps the two equal).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

EXIT_FAILURE = 1
"""Exit status of a command that failed."""
EXIT_USAGE = 2
"""Exit status of a command whose command line or configuration was wrong."""
EXIT_FOREIGN_NEFF = 3
"""Exit status of `run` or `benchmark` given a NEFF another compiler built."""


@dataclass(frozen=True)
class ErrorCode:
    """One code: its name as printed, what it means, the exit status of a command that
    ends with it, and for a runtime status its number in libnrt's C API."""

    code: str
    meaning: str
    exit_status: int = EXIT_FAILURE
    status: int | None = None


CATALOGUE: dict[str, ErrorCode] = {}
"""Every code nxcc reports, by name, in the order defined."""


def _define(code: str, meaning: str, exit_status: int = EXIT_FAILURE,
            status: int | None = None) -> str:
    if code in CATALOGUE:
        raise ValueError(f"error code {code} defined twice")
    CATALOGUE[code] = ErrorCode(code, " ".join(meaning.split()), exit_status, status)
    return code


# The compiler's codes (neuronx-cc's NCC_E... diagnostics).

BAD_ARGUMENT = _define("NCC_EARG001", """A bad command line or argument: an unknown flag, a
value out of range, a model file that does not exist or cannot be read, a framework that does
not match the file, an option that does not fit the model.""", EXIT_USAGE)
MALFORMED_MODEL = _define("NCC_EFRM001", """The model cannot be read: not a valid ONNX, HLO
(text or HloModuleProto) or StableHLO file, a syntax error, or a model that fails its
format's own checker.""")
INVALID_MODEL = _define("NCC_EFRM002", """The model is inconsistent: an operator's operands,
shapes or attributes disagree with its definition, a name is undefined, or an
input_output_alias pairs values that do not exist or differ in type.""")
UNSUPPORTED_OPERATOR = _define("NCC_EUOC002", """An operator the compiler does not support (an
ONNX op type or domain, an HLO opcode), or a loss that cannot be differentiated.""")
UNSUPPORTED_FEATURE = _define("NCC_EUOC003", """An unsupported feature (a mode, an attribute,
an output) of a supported operator.""")
UNSUPPORTED_DTYPE = _define("NCC_EDTY001", """An element type the compiler has no type
for.""")
DYNAMIC_SHAPE = _define("NCC_EMOD025", """A dynamic dimension, or a value the compiler needs
at compile time (a shape, scales, axes) that is not known then: give the input's size with
--input-shape, or make the value a constant.""")
UNKNOWN_CUSTOM_CALL = _define("NCC_EHCA005", """An HLO custom-call target the compiler does
not know.""")
VERIFICATION_FAILED = _define("NCC_EVRF064", """The program failed verification after a
compiler pass; the message names the pass and the op.""")
WRITE_FAILED = _define("NCC_EIO001", """A result could not be written (a NEFF, a compile cache
entry): the disk is full or read-only. Nothing half-written is left behind.""")
RUNTIME_LIMIT = _define("NCC_ELIM001", """A compiled program the runtime would refuse to
load: a tensor, weight, arena or payload over the runtime's limits. Refused before any NEFF is
written; the message names what is over which limit and the runtime's own code.""")
OUT_OF_MEMORY = _define("NCC_EOOM001", """A program that cannot load: the compiler's estimate
of a logical NeuronCore's peak HBM (weights, inputs, arena, collective buffers) exceeds the
target's HBM per core (or NXCC_HBM_LIMIT). Refused before any NEFF is written; the message
names the estimate, the limit and the largest parts.""")
TRAIN_CONFIG = _define("NCC_ETRN001", """A training configuration that cannot be used: a YAML
key, a value, a data file or the model it names; the message names the key.""", EXIT_USAGE)
CHECKPOINT = _define("NCC_ETRN002", """A training checkpoint that cannot be used: missing,
truncated, or written for another layout.""")
RANK_FAILED = _define("NCC_ETRN003", """A rank of a training job failed; the message names the
rank and its error.""")


class NrtStatus(enum.IntEnum):
    """The status codes of the Neuron runtime's C API (libnrt), printed as `NRT_<NAME>`."""

    meaning: str

    def __new__(cls, value: int, meaning: str) -> NrtStatus:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = " ".join(meaning.split())
        return member

    @classmethod
    def of(cls, value: int) -> NrtStatus:
        """The member whose code is `value` (ValueError for none): the enum's lookup, which
        the type checker would take for a call of `__new__`."""
        return cls(value)  # type: ignore[call-arg]

    SUCCESS = 0, "Success (never reported as an error)."
    FAILURE = 1, """A failure with no more specific status: a rank of the job was lost, or an
    execution failed."""
    INVALID = 2, """The runtime cannot use its input: a NEFF that cannot be read, a NEURON_RT_*
    variable with a bad value, a placement that does not fit the instance, a NEFF compiled
    for another logical NeuronCore size, an SPMD run of the wrong size."""
    INVALID_HANDLE = 3, "A model that is not loaded (unloaded, or closed)."
    RESOURCE = 4, "A resource the runtime needs is not available (its runtime directory)."
    TIMEOUT = 5, "An execution did not complete within NEURON_RT_EXEC_TIMEOUT seconds."
    HW_ERROR = 6, "A hardware error (libnrt's; the simulated cores have none)."
    QUEUE_FULL = 7, """Too many asynchronous executions in flight
    (NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS)."""
    LOAD_NOT_ENOUGH_NC = 9, """Not enough NeuronCores: the cores asked for are held by another
    process, or are not among this process's cores."""
    UNSUPPORTED_NEFF_VERSION = 10, """A NEFF of a version or an architecture this runtime does
    not run."""
    UNINITIALIZED = 13, "The runtime was used before it was initialized."
    CLOSED = 14, "The runtime was used after it was closed."
    EXEC_BAD_INPUT = 1002, """An execution's inputs do not match the model's: a name missing or
    unknown, a wrong shape or dtype."""
    EXEC_NC_BUSY = 1005, "The NeuronCore is busy with another execution (libnrt's)."

    @property
    def code(self) -> str:
        """The status as printed: `NRT_INVALID`..."""
        return "NRT_" + self.name


for _status in NrtStatus:
    _define(_status.code, _status.meaning, status=int(_status))

# The NEFF validation codes (nxcc's own, beside the runtime's statuses).

NEFF_CONTAINER = NrtStatus.INVALID.code
"""A NEFF whose container cannot be read: header, sizes, hash, gzip, tar, manifest syntax."""
NEFF_SCHEMA = _define("NRT_ENEFF002", """A NEFF whose manifest or program breaks the schema:
a key missing, a value of the wrong type or out of range, an unknown dtype.""")
NEFF_REFERENCE = _define("NRT_ENEFF003", """A NEFF that names something it does not hold: a
function, kernel, slot, weight, program or output, or counts that disagree.""")
NEFF_SIZE = _define("NRT_ENEFF004", """A NEFF with a tensor, arena or weight over its limit, a
buffer outside its arena, or a weight whose bytes do not match its shape and dtype.""")
NEFF_VERSION = NrtStatus.UNSUPPORTED_NEFF_VERSION.code
"""A NEFF of a major version this tool does not read."""
NEFF_FOREIGN = _define("NRT_ENEFF005", """A NEFF another compiler built (AWS's neuronx-cc):
`inspect-neff` shows it; `run` and `benchmark` cannot execute it, since its engine programs run
only on Neuron hardware.""", EXIT_FOREIGN_NEFF)


def exit_status(code: str) -> int:
    """The exit status of a command that ends with `code` (1 for a code not catalogued)."""
    entry = CATALOGUE.get(code)
    return entry.exit_status if entry is not None else EXIT_FAILURE


class Error(Exception):
    """Something nxcc refuses (a model, a flag, a NEFF, a variable, a placement), described
    by `code` (a key of `CATALOGUE`) and a message that names the thing and what is wrong.
    """

    code: str = NrtStatus.FAILURE.code

    @property
    def exit_status(self) -> int:
        """The exit status of a command that ends with this error."""
        return exit_status(self.code)

    def report(self) -> str:
        """The error as the command line prints it after `ERROR: `: `[CODE] message`."""
        message = self.args[0] if self.args else ""
        return f"[{self.code}] {message}"


class CompileError(Error):
    """The compiler refused the model, a flag or a training setup (an `NCC_*` code).

    `str(exc)` is `[CODE] message`.
    """

    def __init__(self, code: str, message: str, value: str | None = None) -> None:
        """`value` names the model value the error is about, when there is one (e.g. the
        value an NCC_EMOD025 error needs known at compile time)."""
        super().__init__(message)
        self.code = code
        self.value = value

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"


class NrtError(Error, RuntimeError):
    """The runtime refused a load or an execution: `status` is libnrt's status.

    `code` is `NRT_<status>`, except for a NEFF the runtime refused, which keeps the code of
    the NEFF's own error (`NRT_ENEFF002`...). `str(exc)` is `NRT_<NAME> (<number>): message`.
    """

    def __init__(self, status: NrtStatus, message: str) -> None:
        super().__init__(message)
        self.status = status

    @property
    def code(self) -> str:  # type: ignore[override]  # computed: the cause's, else the status's
        cause = self.__cause__
        if isinstance(cause, NeffError):
            return cause.code
        return self.status.code

    def __str__(self) -> str:
        return f"NRT_{self.status.name} ({int(self.status)}): {self.args[0]}"


class NeffError(Error):
    """A NEFF that cannot be read or written, in one line naming the file and the problem.

    `str(exc)` is `"<source>: <problem>"` and never contains a newline (any newline in
    `problem` is folded into a space). `source` is the file path (or a pseudo-name such as
    `"<header>"`), `problem` the description without it, and `code` one of the NEFF codes
    (`NEFF_CONTAINER` unless the raiser says otherwise).
    """

    def __init__(self, source: str, problem: str, code: str = NEFF_CONTAINER) -> None:
        self.source: str = source
        self.problem: str = " ".join(problem.split())
        self.code = code
        super().__init__(f"{self.source}: {self.problem}")


def catalogue_page() -> str:
    """The catalogue as the markdown page docs/error-codes.md."""
    lines = [
        "# Error codes",
        "",
        "Every error nxcc reports carries one of these codes. The command line prints it as",
        "one line on stderr, `ERROR: [CODE] what is wrong`, and exits with the status shown",
        "(`0` success, `130` interrupted). From Python, the same errors are raised as",
        "`nxcc.Error` and its subclasses (`nxcc.CompileError` for `NCC_*`, `nxcc.NrtError`",
        "and `nxcc.NeffError` for `NRT_*`), with the code in `.code` and the line the",
        "command prints in `.report()`.",
        "",
        "This page is generated from `nxcc/errors.py` (`python -m nxcc.errors`).",
        "",
    ]
    sections = (("Compiler (`NCC_*`)", "NCC_"), ("Runtime and NEFF (`NRT_*`)", "NRT_"))
    for title, prefix in sections:
        lines += [f"## {title}", "", "| code | exit status | meaning |", "| --- | --- | --- |"]
        for entry in CATALOGUE.values():
            if entry.code.startswith(prefix) and entry.status != 0:
                number = f" ({entry.status})" if entry.status is not None else ""
                lines.append(f"| `{entry.code}`{number} | {entry.exit_status} | "
                             f"{entry.meaning} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(catalogue_page(), end="")
