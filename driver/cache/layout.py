"""Where the compile cache keeps things, and reading a published entry (see `store` for the
whole layout). Imports only the standard library's light modules and the bounded readers of
`backend.userfiles`: a replayed hit (`cli.replay`) reads entries through this module alone."""

from __future__ import annotations

import hashlib
import os
import re

from nxcc.backend.userfiles import UserFileError, read_regular
from nxcc.backend.userfiles.structured import load_json_file
from nxcc.version import COMPILER_VERSION

DEFAULT_ROOT = "/var/tmp/neuron-compile-cache"
ENV_VAR = "NEURON_COMPILE_CACHE_URL"
META = "meta.json"
NEFF = "model.neff"
ERROR = "error.json"
FLAGS = "compile_flags.json"
STAGING_PREFIX = ".tmp-"
ERROR_CODE = re.compile(r"NCC_[A-Z]{4}[0-9]{3}")
"""The code of a remembered failure (never NCC_EARG001: argument errors are not kept)."""
MAX_CREATED = 1e11
"""A bound on `meta.json`'s creation time (seconds since 1970; the year 5138)."""


def cache_location(cache_dir: str | None = None) -> tuple[str, str | None]:
    """(the cache's root, a warning or None). The root is `cache_dir`, else
    `NEURON_COMPILE_CACHE_URL`, else the default; a local path may be written `file://...`.
    A remote URL (`s3://bucket/prefix`, as NxD jobs set) cannot be reached from here: the
    root is then the local default and the warning says so, naming where the URL came from."""
    given = cache_dir or os.environ.get(ENV_VAR)
    root = given or DEFAULT_ROOT
    if root.startswith("file://"):
        root = root[len("file://"):]
    if "://" not in root:
        return root, None
    source = "--cache-dir" if cache_dir else ENV_VAR
    return DEFAULT_ROOT, (f"{source}={given}: nxcc cannot reach a remote compile cache; it "
                          f"uses the local cache {DEFAULT_ROOT} instead")


def cache_root(cache_dir: str | None = None) -> str:
    """The cache's root (`cache_location`), without its warning."""
    return cache_location(cache_dir)[0]


def version_dir(root: str) -> str:
    """The directory of this compiler version's entries under the cache `root`."""
    return os.path.join(root, f"neuronxcc-{COMPILER_VERSION}")


def entry_name(module_sha256: str, flags_sha256: str) -> str:
    """The directory name of the entry of a module hash and a flags hash."""
    return f"MODULE_{module_sha256[:20]}+{flags_sha256[:8]}"


def read_meta(path: str) -> dict | None:
    """The `meta.json` of the published entry at `path`, or None if there is no complete
    entry there (none, unreadable, or not of the form `CompileCache.publish` writes: a
    damaged entry is a miss)."""
    try:  # a regular file of bounded size and nesting (never a FIFO or a device)
        meta = load_json_file(os.path.join(path, META))
    except UserFileError:
        return None
    return meta if _valid_meta(meta) else None


def _valid_meta(meta: object) -> bool:
    """`meta` has the fields and types `publish` writes (what `cache list` and a hit read)."""
    if not isinstance(meta, dict):
        return False
    created = meta.get("created")
    if isinstance(created, bool) or not isinstance(created, int | float) \
            or not 0 <= created < MAX_CREATED or not isinstance(meta.get("compiler_version"), str):
        return False
    if meta.get("status") == "ok":
        size = meta.get("neff_bytes")
        return isinstance(meta.get("neff_sha256"), str) and isinstance(size, int) \
            and not isinstance(size, bool) and size >= 0
    if meta.get("status") == "failed":
        return isinstance(meta.get("error_code"), str) and ERROR_CODE.fullmatch(
            meta["error_code"]) is not None
    return False


def verified_neff(path: str, meta: dict) -> bytes | None:
    """The NEFF of the entry at `path`, or None if it is missing, not a regular file, or
    does not have the size and SHA-256 its `meta` records (a damaged entry)."""
    try:
        data = read_regular(os.path.join(path, NEFF), int(meta["neff_bytes"]), "cached NEFF")
    except (UserFileError, KeyError, TypeError, ValueError):
        return None
    if hashlib.sha256(data).hexdigest() != meta.get("neff_sha256"):
        return None
    return data
