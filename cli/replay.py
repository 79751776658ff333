"""Replaying a compile-cache hit of a command line seen before, without click or the driver.

A cache hit spends most of its time starting up: click and the option parsing cost more than
reading the NEFF. So after a compile that went through the cache, `remember` records what
its command line resolved to (model file, output, cache entry, log level and file), keyed by
the exact arguments, the working directory, the `NEURON_*`/`NXCC_*` environment and the
compiler version. `replay` is tried first on every command: when the same command line comes
again and the model file still has the recorded SHA-256 and the entry is intact, it copies
the NEFF out, logs and prints what a full hit would, and the command is done. In every other
case (no record, a changed file, a damaged or failed entry, any error) it returns False and
the full command runs, which compiles, reports errors and records again. A replay never
decides anything a full run would decide differently: the record only says what the same
arguments in the same place already meant.

Command lines that name `--cache-dir` or `--no-cache` are not recorded (their cache is not
the one the records live in); neither are training compiles, `SaveTemps` and
`--print-ir-after`, which the cache bypasses.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence

from nxcc.backend.userfiles.structured import load_json_file
from nxcc.cli.log_handlers import configure_logging
from nxcc.driver.cache.digest import canonical_json, file_sha256
from nxcc.driver.cache.layout import (
    cache_location,
    cache_root,
    entry_name,
    read_meta,
    verified_neff,
    version_dir,
)
from nxcc.driver.output import write_bytes_atomically
from nxcc.version import COMPILER_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nxcc.driver.cache.key import CacheKey

log = logging.getLogger("nxcc.compiler")

RECORDS = "command-lines"
_NOT_RECORDED = ("--cache-dir", "--no-cache")
PASS_LINE = "Compiler status PASS"


def wrote_message(output: str, status: str, entry: str | None, seconds: float) -> str:
    """The info line a compile logs when its NEFF is written (one wording for both paths)."""
    how = f"compile cache {status}: {entry}" if entry else "compile cache off"
    return f"wrote {output} ({how}, {seconds:.3f} s)"


def _record_path(argv: Sequence[str]) -> str | None:
    """Where the record of `argv` lives, or None when such a command line is not recorded."""
    if any(a.split("=", 1)[0] in _NOT_RECORDED for a in argv):
        return None
    root = cache_root(None)
    environment = sorted((k, v) for k, v in os.environ.items()
                         if k.startswith(("NEURON_", "NXCC_")))
    identity = canonical_json([COMPILER_VERSION, list(argv), os.getcwd(), environment])
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]
    return os.path.join(version_dir(root), RECORDS, digest + ".json")


def remember(argv: Sequence[str], model: str, output: str, key: CacheKey, level: int,
             logfile: str | None) -> None:
    """Record that `argv` compiled `model` to `output` through the entry of `key`. Best
    effort: a record that cannot be written only means the next hit takes the full path."""
    try:
        path = _record_path(argv)
        if path is None:
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        record = {"model": os.path.abspath(model), "output": os.path.abspath(output),
                  "module_sha256": key.module_sha256, "flags_sha256": key.flags_sha256,
                  "level": level, "logfile": os.path.abspath(logfile) if logfile else None}
        write_bytes_atomically(path, json.dumps(record).encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - a record is an optimisation, never an error
        log.debug("command line not recorded for replay: %s", exc)


def replay(argv: Sequence[str]) -> bool:
    """Serve `argv` from its record (True: the NEFF is written and the command is done), or
    False, having changed nothing, when the full command must run."""
    start = time.perf_counter()
    try:
        path = _record_path(argv)
        if path is None or not os.path.isfile(path):
            return False
        record = load_json_file(path)  # regular, bounded (a FIFO would wait forever)
        if file_sha256(record["model"]) != record["module_sha256"]:
            return False
        entry = entry_name(record["module_sha256"], record["flags_sha256"])
        path = os.path.join(version_dir(cache_root(None)), entry)
        meta = read_meta(path)
        data = None if meta is None or meta["status"] != "ok" else verified_neff(path, meta)
        if data is None:
            return False
        configure_logging(int(record["level"]), record["logfile"])
        note = cache_location(None)[1]
        if note:
            log.warning("%s", note)
        write_bytes_atomically(record["output"], data)
    except Exception:  # noqa: BLE001 - any doubt means the full command runs and reports it
        return False
    log.info("compile cache hit: %s", entry)
    log.info("%s", wrote_message(record["output"], "hit", entry, time.perf_counter() - start))
    print(PASS_LINE, flush=True)
    return True
