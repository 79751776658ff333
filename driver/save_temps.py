"""`--pipeline compile SaveTemps`: the intermediate files of a compile, kept in the work dir.

The work directory receives, in order: `00-frontend.ir` (the module as the frontend made
it), `NN-<pass>.ir` after each pass of the pipeline, `sgNN.ir` for each physical core's
program, `neff.json` (the written NEFF's manifest) and `compile_flags.json` (the normalised
flags). IR files hold the full text (constants included), parseable by `ir.parser`.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field

from nxcc.backend.neff import read_neff
from nxcc.ir.core import Module
from nxcc.ir.printer import print_module

log = logging.getLogger("nxcc.compiler")


def make_workdir(workdir: str | None) -> str:
    """`workdir` (created if needed), or a new temporary directory when None."""
    if workdir is None:
        return tempfile.mkdtemp(prefix="neuroncc_compile_workdir_")
    os.makedirs(workdir, exist_ok=True)
    return workdir


@dataclass
class SavedTemps:
    """Writes the steps of one compile under `directory`."""

    directory: str
    step: int = 0
    files: list[str] = field(default_factory=list)

    def write(self, name: str, text: str) -> None:
        path = os.path.join(self.directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.files.append(name)

    def module(self, label: str, module: Module) -> None:
        """The IR of `module` after step `label`."""
        self.write(f"{self.step:02d}-{label}.ir", print_module(module))
        self.step += 1

    def after_pass(self, name: str, module: Module) -> None:
        self.module(name, module)

    def finish(self, cores: list[Module], neff_path: str, flags: dict[str, object]) -> None:
        """The per-core programs, the NEFF manifest and the flags."""
        for i, core in enumerate(cores):
            self.write(f"sg{i:02d}.ir", print_module(core))
        manifest = read_neff(neff_path).manifest
        self.write("neff.json", json.dumps(manifest, indent=1, sort_keys=True))
        self.write("compile_flags.json", json.dumps(flags, indent=1, sort_keys=True))
        log.info("intermediate files kept in %s (%d files)", self.directory, len(self.files))
