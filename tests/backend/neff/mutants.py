"""Taking a NEFF apart and putting a changed one back together (for refusal tests and the
fuzzer): members as raw bytes, so a mutant may hold anything, valid JSON or not."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from nxcc.backend.neff import NeffHeader, build_payload, read_neff
from nxcc.backend.neff.constants import MANIFEST_NAME
from nxcc.backend.neff.digest import encode_md5
from tests.paths import REPO

EXAMPLES = REPO / "examples"


def unpack(path: Path) -> tuple[NeffHeader, dict[str, bytes]]:
    """The header and every payload member (``neff.json`` included) of a valid NEFF."""
    neff = read_neff(path)
    members = dict(neff.files)
    members[MANIFEST_NAME] = json.dumps(neff.manifest).encode()
    return neff.header, members


def pack_bytes(header: NeffHeader, members: dict[str, bytes]) -> bytes:
    """`members` as an uncompressed NEFF with `header`'s fields (size and hash made to
    match), whatever the members hold."""
    payload = build_payload(members, compress=False)
    fixed = dataclasses.replace(header, data_size=len(payload),
                                hash=encode_md5(hashlib.md5(payload).digest()))
    return fixed.pack(source="<mutant>") + payload


def pack(path: Path, header: NeffHeader, members: dict[str, bytes]) -> Path:
    """`pack_bytes` written to `path`."""
    path.write_bytes(pack_bytes(header, members))
    return path


def edit_json(src: Path, dst: Path, member: str, edit: Callable[[object], object]) -> Path:
    """A copy of `src` whose JSON member `member` is `edit(parsed)` (edit may change the
    value in place and return it, or return anything JSON-encodable)."""
    header, members = unpack(src)
    members[member] = json.dumps(edit(json.loads(members[member]))).encode()
    return pack(dst, header, members)


def replace_member(src: Path, dst: Path, member: str, data: bytes) -> Path:
    """A copy of `src` whose member `member` holds `data` (added if absent)."""
    header, members = unpack(src)
    members[member] = data
    return pack(dst, header, members)


def compile_example(dst: Path, model: str = "mlp") -> Path:
    """`examples/<model>.onnx` compiled for trn1 (in-process, through the driver)."""
    from nxcc.driver.compile import compile_model
    from nxcc.driver.options import CompileOptions

    compile_model(str(EXAMPLES / f"{model}.onnx"), CompileOptions(target="trn1",
                                                                   output=str(dst)),
                  emit=lambda _: None)
    return dst
