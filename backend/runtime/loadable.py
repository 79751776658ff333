"""The runtime's checks applied to a NEFF before it is written, so the compiler never
writes one that `run` would refuse.

`check_loadable(source, manifest, files, weights)` runs on the members the writer is about
to package exactly what loading them runs (`validate`): the manifest's schema and
references, every tensor within `MAX_TENSOR_BYTES`, every weight within it, every program's
schema, references and types, the arenas of all programs together within
`MAX_ARENA_BYTES`, and the payload (tar) within `MAX_PAYLOAD_BYTES`. The limits are those of
`backend.neff.limits`, defined once. A failure is `UnloadableNeff`, the `NeffError` loading
would raise (same code and words).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from nxcc.backend.neff import NeffError
from nxcc.backend.neff.constants import MANIFEST_NAME
from nxcc.backend.neff.errors import SIZE
from nxcc.backend.neff.limits import MAX_PAYLOAD_BYTES, MAX_TENSOR_BYTES
from nxcc.backend.neff.payload import Contents, payload_chunks
from nxcc.backend.neff.writer import encode_manifest
from nxcc.backend.runtime.checked_neff import check_manifest_of, check_programs
from nxcc.ir.limits import oversize


def _joined(contents: Contents) -> bytes:
    parts = contents if isinstance(contents, tuple) else (contents,)
    return b"".join(bytes(memoryview(p).cast("B")) for p in parts)


class UnloadableNeff(NeffError):
    """A NEFF the runtime would refuse: `check_loadable`'s failure (code as loading's)."""


def check_loadable(source: str, manifest: Mapping, files: Mapping[str, Contents],
                   weights: Mapping[str, np.ndarray]) -> None:
    """UnloadableNeff when the runtime would refuse the NEFF of `manifest`, payload `files`
    and `weights` by name (see the module docstring)."""
    try:
        _check(source, manifest, files, weights)
    except UnloadableNeff:
        raise
    except NeffError as exc:
        raise UnloadableNeff(exc.source, exc.problem, exc.code) from None


def _check(source: str, manifest: Mapping, files: Mapping[str, Contents],
           weights: Mapping[str, np.ndarray]) -> None:
    encoded = encode_manifest(manifest)
    m = json.loads(encoded)
    check_manifest_of(source, m, files)
    for name, arr in weights.items():
        problem = oversize(arr.shape, arr.dtype.itemsize, MAX_TENSOR_BYTES)
        if problem is not None:
            raise NeffError(source, f"weight '{name}': {problem}", code=SIZE)
    programs = {sg["program"]: _joined(files[sg["program"]]) for sg in m["subgraphs"]}
    check_programs(source, m, programs, weights)
    size = sum(memoryview(c).nbytes for c in payload_chunks({**files, MANIFEST_NAME: encoded}))
    if size > MAX_PAYLOAD_BYTES:
        raise NeffError(source, f"the payload takes {size} bytes, over the limit of "
                        f"{MAX_PAYLOAD_BYTES}", code=SIZE)
