"""What a pass is: a named transformation of a module that says whether it changed it.

A pass is a frozen dataclass with a class attribute `name` (the name it is registered under
in `passes.registry.PASSES`) and `run(module) -> changed`; its fields are its options, and
a pipeline text writes them as ``name{field=value ...}`` (`passes.pipeline_text`). A pass
holds no state between runs: what it computes goes into the module.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from nxcc.ir.core import Module


class Pass(Protocol):
    """A pass has a `name` and `run(module) -> changed`; it leaves the IR valid (see the
    module docstring)."""

    name: ClassVar[str]

    def run(self, module: Module) -> bool: ...
