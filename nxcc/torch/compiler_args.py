"""`compiler_args` of `nxcc.torch.trace` (neuronx-cc's command-line flags, as torch_neuronx
takes them) as keyword arguments of `nxcc.compile`.

    "--target trn2 --lnc 1 --auto-cast none -O1"
        -> {"target": "trn2", "lnc": 1, "auto_cast": "none", "optlevel": "1"}

A string is split as a shell would; a list is taken word by word. The words after a flag up
to the next flag are its value (`--flag=value` too): none makes it a switch (True), one a
string, several a list (`--pipeline compile SaveTemps`); a flag given twice collects its
values in a list (`--input-shape` per input). Flag names become Python names (`--auto-cast`
-> `auto_cast`); the short spellings `-O2`, `-O 2`, `-lnc 2` and `-o PATH` and the long
`--logical-nc-config` are named as `nxcc.compile` names them, and `lnc` is an int. Which flags
exist and what their values may be, `nxcc.compile` checks, as the command line does.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from nxcc.errors import BAD_ARGUMENT, CompileError

#: Spellings that are not the Python form of `nxcc.compile`'s keyword.
ALIASES = {"O": "optlevel", "lnc": "lnc", "logical_nc_config": "lnc", "o": "output"}


class CompilerArgsError(CompileError):
    """compiler_args that are not neuronx-cc flags (NCC_EARG001)."""

    def __init__(self, message: str) -> None:
        super().__init__(BAD_ARGUMENT, message)


def compiler_flags(compiler_args: str | Sequence[str] | None) -> dict[str, Any]:
    """The flags of `compiler_args` as `nxcc.compile` keywords (see the module docstring);
    values of the types `nxcc.compile` checks each keyword for (hence Any)."""
    if compiler_args is None:
        return {}
    words = shlex.split(compiler_args) if isinstance(compiler_args, str) else \
        [str(w) for w in compiler_args]
    flags: dict[str, Any] = {}
    i = 0
    while i < len(words):
        name, values = _flag(words[i])
        i += 1
        while i < len(words) and not words[i].startswith("-"):
            values.append(words[i])
            i += 1
        value: object = True if not values else values[0] if len(values) == 1 else values
        if name == "lnc":
            value = _lnc(value)
        _add(flags, name, value)
    return flags


def _flag(word: str) -> tuple[str, list[str]]:
    """(keyword name, the values written into the word)."""
    if not word.startswith("-") or word in ("-", "--"):
        raise CompilerArgsError(f"compiler_args: {word!r} is not a flag (flags start with "
                                "'-'; the model is what trace compiles)")
    if word.startswith("--"):
        name, eq, value = word[2:].partition("=")
        name = name.replace("-", "_")
    elif word[1:2] == "O" and word[2:].isdigit():
        name, eq, value = "O", "=", word[2:]
    else:
        name, eq, value = word[1:].partition("=")
    return ALIASES.get(name, name.replace("-", "_")), [value] if eq else []


def _lnc(value: object) -> int:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise CompilerArgsError(f"compiler_args: --lnc takes 1 or 2, not {value!r}")


def _add(flags: dict[str, object], name: str, value: object) -> None:
    if name not in flags:
        flags[name] = value
        return
    previous = flags[name]
    flags[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
