"""Options written before the subcommand (`neuronx-cc --target=trn1 compile ...`).

The real tool accepts its options on either side of the subcommand, and libneuronxla puts
`--target` first. `move_after_command` moves every option found before the first
subcommand name to just after it, where that command's parser sees them (before the
options written after it, so that a later repetition still wins, as in the real tool).
"""

from __future__ import annotations

from collections.abc import Container

#: Options that take the next word as their value when written without `=`; any other
#: option before the subcommand is a switch.
VALUE_OPTIONS = frozenset({
    "--target", "--framework", "--output", "-o", "--optlevel", "-O", "--logical-nc-config",
    "-lnc", "--lnc", "--auto-cast", "--auto-cast-type", "--model-type",
    "--distribution-strategy", "--native-int64", "--implicit-integer-downcast",
    "--input-shape", "--print-ir-after", "--workdir", "--cache-dir", "--jobs",
    "--num-parallel-jobs", "--verbose", "--logfile", "--cache_dir", "--temp-dir", "--dump",
    "--execute-repetition", "--tensorizer-options", "--internal-hlo2tensorizer-options",
    "--internal-backend-options", "--hbm-scratchpad-page-size", "--neuroncore-pipeline-cores",
})


def move_after_command(args: list[str], commands: Container[str]) -> list[str]:
    """`args` with the options before the first command moved to just after it; unchanged
    when there are none, or no command (`--version`, `--help`)."""
    i = 0
    while i < len(args) and args[i] not in commands:
        token = args[i]
        if not token.startswith("-"):
            return args  # a stray word: let click report it
        i += 2 if token in VALUE_OPTIONS and "=" not in token else 1
    if i == 0 or i >= len(args):
        return args
    before = args[:i]
    if any(t in ("--version", "--help", "-h") for t in before):
        return args
    return [args[i], *before, *args[i + 1:]]
