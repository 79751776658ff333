"""What a pass is: a named transformation of a module that says whether it changed it."""

from __future__ import annotations

from typing import ClassVar, Protocol

from nxcc.ir.core import Module


class Pass(Protocol):
    """A pass has a `name` and `run(module) -> changed`; it leaves the IR valid."""

    name: ClassVar[str]

    def run(self, module: Module) -> bool: ...
