"""The one error of `neuronx-cc train`'s inputs: a key (or file) and what is wrong with it."""

from __future__ import annotations

from nxcc import errors
from nxcc.driver.errors import CompileError

#: a bad configuration key, data file or checkpoint: `ERROR: [NCC_ETRN001] <key>: <what>`.
TRAIN_CONFIG = errors.TRAIN_CONFIG


class TrainConfigError(CompileError):
    """`where` (a key path such as `trainer.devices`, or a file) and what is wrong with it."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(TRAIN_CONFIG, f"{where}: {what}", value=where)
        self.where = where
