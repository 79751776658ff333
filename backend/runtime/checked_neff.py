"""One validated reading of a NEFF: the only door from a read NEFF into the executor.

`check_neff(neff)` checks, before anything the NEFF declares is allocated or run:

1. the manifest against its declared schema (`backend.neff.neff_schema.MANIFEST`);
2. what the manifest says across its parts: every input, output and collective within
   MAX_TENSOR_BYTES; every program and weight member it names present in the payload;
   subgraph names unique; each subgraph's blocks one per input and output, of the same rank
   and inside the whole tensor; an ``spmd`` section with as many inputs and outputs;
3. every weight: its ``.npy`` header read first, its declared shape x dtype equal to the
   bytes it holds and within the limit, then loaded (never unpickled): from an
   uncompressed payload, a read-only view of the mapped file, not a copy;
4. every program: parsed with its nesting bounded, its schema
   (`backend.neff.neff_schema.PROGRAM`), then its references, sizes and types
   (`program_check.check_program`); all arenas together within MAX_ARENA_BYTES.

Problems are NeffError with the codes of `backend.neff.errors` (one line each). The
result, a `CheckedNeff`, holds the parsed programs and weights the executors are built from.
"""

from __future__ import annotations

import io
import math
import tokenize
from collections.abc import Container, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.lib import format as npy_format

from nxcc.backend.neff import NeffError, NeffFile, load_npy
from nxcc.backend.neff.errors import REFERENCE, SCHEMA, SIZE
from nxcc.backend.neff.json_schema import conform, load_json
from nxcc.backend.neff.limits import MAX_ARENA_BYTES, MAX_TENSOR_BYTES
from nxcc.backend.neff.mapped import MappedMembers, member_span
from nxcc.backend.neff.neff_schema import MANIFEST, PAIRED_KINDS, PROGRAM
from nxcc.backend.runtime.program_check import check_program
from nxcc.ir.dtypes import DType
from nxcc.ir.limits import oversize

#: Bytes read to parse a mapped weight's `.npy` header (a version 1 header is at most 64 KiB).
_NPY_HEAD_MAX = (1 << 16) + 16


@dataclass(frozen=True)
class CheckedNeff:
    """A NEFF that passed `check_neff`: its manifest, parsed programs (one per subgraph, in
    order) and weights by name."""

    neff: NeffFile
    manifest: dict
    programs: list[dict]
    weights: Mapping[str, np.ndarray]


def check_manifest(neff: NeffFile) -> dict:
    """The manifest, checked against its schema and its payload (steps 1-2 above)."""
    return check_manifest_of(str(neff.path), neff.manifest, neff.files)


def check_manifest_of(source: str, m: dict, members: Container[str]) -> dict:
    """`check_manifest` of manifest `m` of a payload holding `members` (named `source`)."""
    conform(m, MANIFEST, source, "neff.json")
    for kind in ("inputs", "outputs"):
        for i, e in enumerate(m[kind]):
            _bounded(source, f"neff.json: {kind}[{i}] '{e['name']}'", e["dtype"], e["shape"])
    for i, c in enumerate(m.get("collectives") or []):
        _bounded(source, f"neff.json: collectives[{i}]", c["dtype"], c["shape"])
        groups = "source_target_pairs" if c["kind"] in PAIRED_KINDS else "replica_groups"
        if groups not in c:
            raise NeffError(source, f"neff.json: collectives[{i}] ({c['kind']}) needs "
                            f"'{groups}'", code=SCHEMA)
    names = [sg["name"] for sg in m["subgraphs"]]
    if len(set(names)) != len(names):
        raise NeffError(source, f"neff.json: subgraph names repeat: {names}", code=REFERENCE)
    for sg in m["subgraphs"]:
        _member(source, members, sg["program"], f"subgraph '{sg['name']}' program")
        _check_blocks(source, sg, m)
    for name, member in m["weights"]["files"].items():
        _member(source, members, member, f"weight '{name}'")
    spmd = m.get("spmd")
    if spmd is not None:
        for kind in ("inputs", "outputs"):
            if len(spmd[kind]) != len(m[kind]):
                raise NeffError(source, f"neff.json: spmd.{kind} has {len(spmd[kind])} "
                                f"entries, the manifest {len(m[kind])} {kind}", code=REFERENCE)
    return m


def read_checked_weights(neff: NeffFile) -> dict[str, np.ndarray]:
    """The manifest's weights by name, each `.npy` header checked before its data is
    loaded (step 3); the manifest must have passed `check_manifest`."""
    source = str(neff.path)
    out = {}
    for name, member in neff.manifest["weights"]["files"].items():
        out[name] = _read_weight(neff.files, member, f"{source}:{member}")
    return out


def _read_weight(files: Mapping[str, bytes], member: str, source: str) -> np.ndarray:
    """One weight: viewed in place (read-only, not owning its data) when `files` maps an
    uncompressed payload and the data is aligned for its dtype, else read and copied."""
    span = member_span(files, member)
    if span is None:
        data = files[member]
        _check_npy_header(data, source, len(data))
        return load_npy(data, source)
    assert isinstance(files, MappedMembers)
    shape, fortran, dtype, start = _check_npy_header(files.prefix(member, _NPY_HEAD_MAX),
                                                     source, span[1])
    if (span[0] + start) % max(dtype.alignment, 1):
        return load_npy(files[member], source)
    return files.array(member, start, shape, dtype, fortran)


def check_neff(neff: NeffFile, weights: Mapping[str, np.ndarray] | None = None
               ) -> CheckedNeff:
    """All four steps; `weights` (from `read_checked_weights`) lets replicas share them."""
    source = str(neff.path)
    m = check_manifest(neff)
    if weights is None:
        weights = read_checked_weights(neff)
    programs = check_programs(source, m, neff.files, weights)
    return CheckedNeff(neff, m, programs, weights)


def check_programs(source: str, m: dict, files: Mapping[str, bytes],
                   weights: Mapping[str, np.ndarray]) -> list[dict]:
    """Every subgraph's program of manifest `m` parsed from `files` and checked (step 4);
    the parsed programs, in order."""
    programs = []
    for sg in m["subgraphs"]:
        member = sg["program"]
        program = load_json(files[member], source, member)
        conform(program, PROGRAM, source, member)
        assert isinstance(program, dict)  # conform checked it against PROGRAM, an object
        check_program(program, weights, _core_io(m, sg), source, member)
        programs.append(program)
    arenas = sum(f["arena_bytes"] for p in programs for f in p["functions"].values())
    if arenas > MAX_ARENA_BYTES:
        raise NeffError(source, f"the programs' arenas take {arenas} bytes together, over the "
                        f"limit of {MAX_ARENA_BYTES}", code=SIZE)
    return programs


def _core_io(m: dict, sg: dict) -> tuple[list[dict], list[dict]]:
    """The entry signature subgraph `sg` must have: the manifest's inputs and outputs, at
    the shapes of the subgraph's blocks when it lists them."""
    def per_core(kind: str) -> list[dict]:
        blocks = sg.get(kind)
        if blocks is None:
            return m[kind]
        return [dict(e, shape=b["shape"]) for e, b in zip(m[kind], blocks, strict=True)]
    return per_core("inputs"), per_core("outputs")


def _check_blocks(source: str, sg: dict, m: dict) -> None:
    for kind in ("inputs", "outputs"):
        blocks = sg.get(kind)
        if blocks is None:
            continue
        where = f"neff.json: subgraph '{sg['name']}' {kind}"
        if len(blocks) != len(m[kind]):
            raise NeffError(source, f"{where}: {len(blocks)} blocks for {len(m[kind])} "
                            f"{kind}", code=REFERENCE)
        for b, e in zip(blocks, m[kind], strict=True):
            whole = e["shape"]
            if len(b["start"]) != len(whole) or len(b["shape"]) != len(whole) or any(
                    a + s > d for a, s, d in zip(b["start"], b["shape"], whole, strict=True)):
                raise NeffError(source, f"{where}: block start {b['start']} shape "
                                f"{b['shape']} does not fit '{e['name']}' {whole}", code=SIZE)


def _bounded(source: str, what: str, dtype: str, shape: list[int]) -> None:
    nbytes = math.prod(shape) * DType.from_name(dtype).itemsize
    if nbytes > MAX_TENSOR_BYTES:
        raise NeffError(source, f"{what}: {dtype}{shape} is {nbytes} bytes, over the limit "
                        f"of {MAX_TENSOR_BYTES}", code=SIZE)


def _member(source: str, members: Container[str], member: str, what: str) -> None:
    if member not in members:
        raise NeffError(source, f"neff.json: {what} '{member}' is not in the payload",
                        code=REFERENCE)


_NPY_HEADER_READERS = {(1, 0): npy_format.read_array_header_1_0,
                       (2, 0): npy_format.read_array_header_2_0}


def _check_npy_header(data: bytes, source: str, total: int
                      ) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """The `.npy` header's shape x dtype, within the limit and equal to the bytes after
    the header (read without allocating the array) in a member of `total` bytes whose
    first bytes are `data`; returns (shape, fortran order, dtype, header length)."""
    f = io.BytesIO(data)
    try:
        version = npy_format.read_magic(f)
        read = _NPY_HEADER_READERS.get(version)
        if read is None:
            raise ValueError(f"unsupported .npy version {version}")
        shape, fortran, dtype = read(f)
    except (ValueError, TypeError, SyntaxError, EOFError, RecursionError,
            tokenize.TokenError) as exc:  # numpy tokenizes the header's Python literal
        raise NeffError(source, f"malformed .npy header: {type(exc).__name__}: {exc}"
                        ) from None
    if dtype.hasobject:
        raise NeffError(source, "a weight of Python objects is refused")
    problem = oversize(shape, dtype.itemsize)
    if problem is not None:
        raise NeffError(source, f"weight: {problem}", code=SIZE)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes != total - f.tell():
        raise NeffError(source, f"weight declares {dtype}{list(shape)} ({nbytes} bytes) but "
                        f"holds {total - f.tell()}", code=SIZE)
    return shape, fortran, dtype, f.tell()
