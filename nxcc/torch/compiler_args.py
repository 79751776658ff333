"""`compiler_args` of `nxcc.torch.trace` (neuronx-cc's command-line flags, as torch_neuronx
takes them) as keyword arguments of `nxcc.compile`.

    "--target trn2 --lnc 1 --auto-cast none -O1"
        -> {"target": "trn2", "lnc": 1, "auto_cast": "none", "optlevel": 1}

A string is split as a shell would; a list is taken word by word. `--flag value` and
`--flag=value` give the value (a whole number becomes an int), a `--flag` followed by another
flag or by nothing is a switch (True), a flag given twice gives the list of its values.
Flag names become Python names (`--auto-cast` -> `auto_cast`); the short spellings `-O2`,
`-O 2`, `-lnc 2` and `-o PATH` and the long `--logical-nc-config` are named as `nxcc.compile`
names them. Which flags exist, and their values, `nxcc.compile` checks.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from nxcc.errors import BAD_ARGUMENT, CompileError

#: Spellings that are not the Python form of `nxcc.compile`'s keyword.
ALIASES = {"O": "optlevel", "lnc": "lnc", "logical_nc_config": "lnc", "o": "output"}
_NUMBER = re.compile(r"^-?\d+$")


class CompilerArgsError(CompileError):
    """A word of compiler_args that is not a flag or a flag's value (NCC_EARG001)."""

    def __init__(self, message: str) -> None:
        super().__init__(BAD_ARGUMENT, message)


def compiler_flags(compiler_args: str | Sequence[str] | None) -> dict[str, object]:
    """The flags of `compiler_args` as `nxcc.compile` keywords (see the module docstring)."""
    if compiler_args is None:
        return {}
    words = shlex.split(compiler_args) if isinstance(compiler_args, str) else \
        [str(w) for w in compiler_args]
    flags: dict[str, object] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        name, value = _flag(word)
        if value is None and i < len(words) and not _is_flag(words[i]):
            value = words[i]
            i += 1
        _add(flags, name, True if value is None else _typed(value))
    return flags


def _is_flag(word: str) -> bool:
    return word.startswith("-") and not _NUMBER.match(word)


def _flag(word: str) -> tuple[str, str | None]:
    """(keyword name, the value written into the word or None)."""
    if not _is_flag(word) or word in ("-", "--"):
        raise CompilerArgsError(f"compiler_args: {word!r} is not a flag (flags start with "
                                "'-'; the model is what trace compiles)")
    if word.startswith("--"):
        name, eq, value = word[2:].partition("=")
        return ALIASES.get(name.replace("-", "_"), name.replace("-", "_")), value if eq else None
    body = word[1:]
    if body.startswith("O") and body[1:].isdigit():
        return "optlevel", body[1:]
    name, eq, value = body.partition("=")
    return ALIASES.get(name, name.replace("-", "_")), value if eq else None


def _typed(value: str) -> object:
    return int(value) if _NUMBER.match(value) else value


def _add(flags: dict[str, object], name: str, value: object) -> None:
    if name not in flags:
        flags[name] = value
        return
    previous = flags[name]
    flags[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
