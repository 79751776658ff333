"""Reading the arrays a user hands `run --inputs` and `--load-state` (.npz).

`read_npz` reads through the one safe reader of user `.npz` files (`backend.userfiles.npz`:
regular files only, every header and size checked before numpy allocates, no Python
objects, no duplicate, encrypted, bzip2 or overlapping members, no trailing data) and
raises its refusal as NrtError(EXEC_BAD_INPUT), one line.
"""

from __future__ import annotations

import numpy as np

from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.npz import read_npz as read_user_npz


def read_npz(path: str, what: str = "inputs") -> dict[str, np.ndarray]:
    """The arrays of the .npz at `path`, by name (see the module docstring); `what` the
    file is (inputs, state) names it in a refusal."""
    try:
        return read_user_npz(path)
    except UserFileError as exc:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"cannot read {what} {exc}") from None
