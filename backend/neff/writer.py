"""Atomic writing of a NEFF file: header + payload, replacing the target only on success."""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from nxcc.backend.neff.atomic import atomic_file
from nxcc.backend.neff.constants import DEFAULT_BUILD_VERSION, FEATURE_VNC, MANIFEST_NAME
from nxcc.backend.neff.digest import HASH_FIELD_BYTES, MD5, field_of, new_hasher
from nxcc.backend.neff.header import TPB_PER_NODE_BYTES, NeffHeader
from nxcc.backend.neff.payload import Contents, build_payload, payload_chunks

#: The namespace of NEFF uuids (a fixed, arbitrary uuid: uuid5 needs one).
_NEFF_NAMESPACE = uuid.UUID("6e786363-6e65-4646-8000-6e6566667575")


def encode_manifest(manifest: Mapping[str, Any]) -> bytes:
    """Serialize the manifest as UTF-8 JSON with sorted keys and indent 1."""
    return json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False).encode("utf-8")


def write_neff(
    path: str | os.PathLike[str],
    *,
    manifest: Mapping[str, Any],
    files: Mapping[str, Contents],
    name: str,
    num_tpb: int,
    lnc_size: int,
    compress: bool = True,
    build_version: str = DEFAULT_BUILD_VERSION,
) -> NeffHeader:
    """Write a NEFF to ``path`` and return its header.

    The payload holds ``manifest`` as ``neff.json`` plus ``files`` (payload path ->
    bytes, or a tuple of bytes-like parts: see `payload.Contents`). The header follows the
    real tool's: package version 2, the payload's MD5 in its encoding (`digest`),
    ``num_tpb`` logical cores (``requested_tpb_count`` the same, ``tpb_per_node``
    ``[num_tpb, 0, ...]``), the feature word with ``FEATURE_VNC`` when ``lnc_size`` > 1; a
    reader tells a plain payload from gzip by its magic number. The uuid is derived from
    the payload's hash and the header fields (:func:`content_uuid`), so the same inputs
    always give byte-identical files (the payload itself is deterministic: see
    ``build_payload``).

    A compressed payload is serialized in memory first, an uncompressed one is written
    chunk by chunk from the members' own buffers, another thread computing their MD5 at
    the same time (the header goes first as a placeholder of the same size and is
    rewritten once the hash is known); the bytes go to a temp file in the target's
    directory which is fsynced and put in place as ``path`` (`atomic.atomic_file`). On
    any exception (KeyboardInterrupt included) the temp file is removed, the
    exception propagates, and a pre-existing file at ``path`` is left untouched.

    Raises ValueError for a ``files`` key that is unsafe or equal to ``neff.json``,
    TypeError for a non-JSON-serializable manifest or non-bytes contents, and
    NeffError (naming ``path``) for header fields that cannot be encoded or that
    the runtime would refuse (lnc_size not 1 or 2, ...).
    """
    target = os.fspath(path)
    if MANIFEST_NAME in files:
        raise ValueError(f"files must not contain {MANIFEST_NAME!r}; pass it as manifest")
    if num_tpb < 1:
        raise ValueError(f"num_tpb must be >= 1, got {num_tpb}")
    members = {**files, MANIFEST_NAME: encode_manifest(manifest)}
    chunks: list[bytes | memoryview]
    if compress:
        chunks = [build_payload(members, True)]
    else:  # written as it is built: the weights' data is never copied
        chunks = payload_chunks(members)
    bits = FEATURE_VNC if lnc_size > 1 else 0
    header = NeffHeader(
        hash=bytes(HASH_FIELD_BYTES),
        uuid=uuid.UUID(int=0),
        name=name,
        data_size=sum(memoryview(c).nbytes for c in chunks),
        num_tpb=num_tpb,
        requested_tpb_count=num_tpb,
        tpb_per_node=bytes([min(num_tpb, 255)]).ljust(TPB_PER_NODE_BYTES, b"\0"),
        lnc_size=lnc_size,
        feature_bits=bits,
        build_version=build_version,
    )
    placeholder = header.pack(source=target)  # a field the runtime would refuse raises here
    with atomic_file(target) as out:
        out.write(placeholder)
        payload_hash = _write_hashing(out, chunks)
        header = dataclasses.replace(header, hash=payload_hash, uuid=content_uuid(
            payload_hash, name, num_tpb, lnc_size, bits, build_version))
        out.seek(0)
        out.write(header.pack(source=target))
    return header


def _write_hashing(out: BinaryIO, chunks: list[bytes | memoryview]) -> bytes:
    """Write `chunks` to `out` in order while another thread hashes them (both release the
    GIL on large buffers, so a payload of weights is read twice at once, not one pass after
    the other); the payload's MD5 header field."""
    hasher = new_hasher(MD5)
    with ThreadPoolExecutor(max_workers=1) as pool:
        def hash_all() -> None:
            for chunk in chunks:
                hasher.update(chunk)

        hashed = pool.submit(hash_all)
        try:
            for chunk in chunks:
                out.write(chunk)
        finally:
            hashed.result()
    return field_of(MD5, hasher)


def content_uuid(payload_hash: bytes, name: str, num_tpb: int, lnc_size: int,
                 feature_bits: int, build_version: str) -> uuid.UUID:
    """A name-based (version 5 style) uuid of everything the NEFF holds: equal contents give
    equal uuids, any change to the payload or a header field gives a different one."""
    text = f"{payload_hash.hex()}|{name}|{num_tpb}|{lnc_size}|{feature_bits}|{build_version}"
    return uuid.uuid5(_NEFF_NAMESPACE, text)


