"""NEFFs laid out as AWS's neuronx-cc lays them out, written from scratch for the tests.

Nothing here comes from a real NEFF's bytes: the layout is the one docs/neff-format.md
describes (learned from NEFFs the real compiler wrote), and every member is generated:
the 1024-byte header (struct alone), `info.json`, `kelf-N.json`, a TVM-graph `neff.json`,
`hlo_stats.json`, `debug_info/`, and per subgraph `def.json`, `tensor_map.json`,
`act_info.json`, one 64-byte-per-instruction stream per engine with its `.json`, the
engines' assembly debug info (protobuf: one record per instruction) and constants (`.npy`,
or `.bin` named by a variable of type `file`). `RealNeff` chooses the variety the checks
need: target code name, LNC, subgraphs, kelf files, gzip or plain, NEFF major version,
debug info stripped, `neff.json` missing, unknown members.

    python tests/backend/neff/real_layout.py DIR     # writes every variant of VARIANTS into DIR
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import struct
import sys
import tarfile
import uuid
from pathlib import Path

import numpy as np

HEADER = struct.Struct("<QQQQQ128sI32s16s256sI64sQI468s")
ENGINES = (("pe", "PE", 1), ("act", "Activation", 2), ("pool", "Pool", 3),
           ("dve", "DVE", 5), ("sp", "SP", 6))  # def.json key, member name, engine id
INSTRUCTION_BYTES = 64


@dataclasses.dataclass(frozen=True)
class RealNeff:
    """One NEFF to write; the defaults are a trn2 NEFF at LNC 2, as neuronx-cc 2.23 writes."""

    code_name: str = "cayman"
    lnc: int = 2
    lnc_field: int | None = None  # what offset 552 holds (default: lnc)
    kelf_files: int = 1  # the subgraphs spread over this many kelf-N.json
    compressed: bool = True
    major: int = 2
    tool_version: str | None = "2.23.6484.0+3b612583"
    inputs: tuple[tuple[str, str, tuple[int, ...]], ...] = (
        ("x", "float16", (128, 256)), ("y", "float16", (256, 128)))
    outputs: tuple[tuple[str, str, tuple[int, ...]], ...] = (("output0", "float16", (128, 128)),)
    signature_outputs: bool = False  # the real files leave them empty
    debug_info: bool = True
    neff_json: bool = True
    hlo_stats: bool = True
    metrics: bool = False  # metrics.json, as releases up to 2.18 write it
    bin_constant: bool = False  # a constant as `.bin` named by a `file` variable
    extra: tuple[tuple[str, bytes], ...] = ()  # members the reader does not know
    instructions: tuple[int, ...] = (12, 5, 7, 2, 3)  # per engine, ENGINES' order
    feature_word: int = 0x209C00
    drop: tuple[str, ...] = ()  # members to leave out (to make it inconsistent)
    heads: tuple[tuple[int, int, int], ...] | None = None  # neff.json's, when not the usual

    @property
    def subgraphs(self) -> list[str]:
        return [f"sg{i:02d}" for i in range(self.lnc)]


def md5_field(payload: bytes) -> bytes:
    """The header's hash: the payload's MD5 as four 32-bit words stored little-endian."""
    return struct.pack("<4I", *struct.unpack(">4I", hashlib.md5(payload).digest())) + bytes(16)


def write_real_neff(path: Path, spec: RealNeff = RealNeff()) -> Path:
    members = {k: v for k, v in _members(spec).items() if k not in spec.drop}
    payload = _tar(members, spec.compressed)
    lnc = spec.lnc if spec.lnc_field is None else spec.lnc_field
    header = HEADER.pack(
        2, 1024, len(payload), spec.major, 0, b"", 1, md5_field(payload),
        uuid.UUID(int=len(payload) * 7919 + spec.lnc, version=4).bytes,
        b"file.neff", 1, bytes([1]) + bytes(63), spec.feature_word, lnc, b"")
    path.write_bytes(header + payload)
    return path


def _tar(members: dict[str, bytes], compressed: bool) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():  # neff.json last, as the real tool writes it
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uname, info.gname = len(data), 0o664, "nobody", "nobody"
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if compressed else raw


def _json(value: object, indent: int | None = 4) -> bytes:
    return json.dumps(value, indent=indent).encode()


def _members(spec: RealNeff) -> dict[str, bytes]:
    m: dict[str, bytes] = {}
    if spec.debug_info:
        m["debug_info/debug_info_hlo.dbg_sg000000"] = _proto(b"Debug info for HLO", 0)
    if spec.hlo_stats:
        m["hlo_stats.json"] = _json({"HloMacCount": 4194304, "Traffic": 262144,
                                     "ArithmeticIntensity": 32.0, "HloInputCount": -1})
    if spec.metrics:
        m["metrics.json"] = _json([{"MetricName": "TPBCount", "Value": 1, "Unit": "Count"}], 2)
    info: dict[str, object] = {"kelp_version": "Dynamic", "name": "file.neff", "num_tpb": 1,
                               "num_tpb_requested": 1, "num_tpb_per_node": [1] + [0] * 63}
    if spec.tool_version is not None:
        info = {"tool_version": spec.tool_version, **info}
    m["info.json"] = _json(info, 2)
    per_kelf = -(-len(spec.subgraphs) // spec.kelf_files)
    for k in range(spec.kelf_files):
        graphs = [{"definition": f"{sg}/def.json", "name": sg}
                  for sg in spec.subgraphs[k * per_kelf:(k + 1) * per_kelf]]
        m[f"kelf-{k}.json"] = _json({"graphs": graphs, "version": "0.5",
                                     "target": spec.code_name})
    for sg in spec.subgraphs:
        m.update(_subgraph(spec, sg))
    m.update(dict(spec.extra))
    if spec.neff_json:
        m["neff.json"] = _json(_graph(spec))
    return m


def _subgraph(spec: RealNeff, sg: str) -> dict[str, bytes]:
    m: dict[str, bytes] = {}
    d: dict[str, object] = {"#rank_world_size": 0, "name": "definition", "version": "0.6",
                            "neff_features": ["neff_feature_vnc"] if spec.lnc > 1 else []}
    for (key, name, engine_id), count in zip(ENGINES, spec.instructions, strict=True):
        d[key], d[f"{key}_instr"] = f"{name}.json", f"{name}.bin"
        m[f"{sg}/{name}.bin"] = bytes([0xB1, 0x10] + [0] * 62) * count
        engine: dict[str, object] = {"dma": [], "instr": f"{name}.bin", "name": f"{name}.json"}
        if key == "act":
            engine["act_info"] = "act_info.json"
        m[f"{sg}/{name}.json"] = _json(engine, None)
        if spec.debug_info:
            d[f"{key}_asm_dbg"] = [f"debug_info_asm_{name}.dbg"]
            m[f"{sg}/debug_info_asm_{name}.dbg"] = _proto(
                b"Debug info for one engine's assembly instructions.", engine_id, count)
    variables: dict[str, dict[str, object]] = {"SB": {"type": "state-buffer", "var_id": 0}}
    for i, (name, dtype, shape) in enumerate(spec.inputs + spec.outputs):
        kind = "input" if i < len(spec.inputs) else "output"
        variables[name] = {"ops": [], "size": int(np.prod(shape)) * np.dtype(dtype).itemsize,
                           "type": kind, "var_id": i + 1}
    const = np.arange(128 * 128, dtype=np.float16).reshape(128, 128, 1, 1)
    if spec.bin_constant:
        file_name = f"value_{sg}_weights.bin"
        m[f"{sg}/{file_name}"] = const.tobytes()
    else:
        file_name = f"value_{sg}_identity_82_CRSM.npy"
        buf = io.BytesIO()
        np.save(buf, const)
        m[f"{sg}/{file_name}"] = buf.getvalue()
    variables["identity_82"] = {"file_name": file_name, "size": const.nbytes, "type": "file",
                                "var_id": 9}
    d["var"] = variables
    m[f"{sg}/def.json"] = _json(dict(sorted(d.items())))
    m[f"{sg}/tensor_map.json"] = _json({
        name: {"dtype": dtype, "is_const": False, "kind": kind, "tf_shape": list(shape),
               "sim_shape": list(shape)}
        for kind, tensors in (("input", spec.inputs), ("output", spec.outputs))
        for name, dtype, shape in tensors})
    m[f"{sg}/act_info.json"] = _json({"act_func_sets": [{"name": "exp_and_others",
                                                         "bkt_bin": "exp_and_others_bkt.bin"}]})
    m[f"{sg}/exp_and_others_bkt.bin"] = bytes(256)
    return m


def _graph(spec: RealNeff) -> dict[str, object]:
    """The TVM graph: one null node per input, one `__kelf` node per kelf file."""
    nodes: list[dict[str, object]] = [
        {"op": "null", "name": name, "inputs": [], "output_names": [name], "is_param": "0"}
        for name, _, _ in spec.inputs]
    shapes = [list(s) for _, _, s in spec.inputs]
    dtypes = [d for _, d, _ in spec.inputs]
    rows = list(range(len(spec.inputs) + 1))
    heads = []
    for k in range(spec.kelf_files):
        # each core of the logical core names the same outputs (the real files do)
        names = [name for name, _, _ in spec.outputs] * (spec.lnc // spec.kelf_files or 1)
        nodes.append({"op": "tvm_op", "name": f"sg_coreV1{k}", "output_names": names,
                      "attrs": {"func_name": "__kelf", "kelf": f"kelf-{k}.json",
                                "num_inputs": str(len(spec.inputs)),
                                "num_outputs": str(len(names))},
                      "inputs": [[i, 0, 0] for i in range(len(spec.inputs))]})
        heads += [[len(nodes) - 1, j, 0] for j in range(len(names))]
        for j in range(len(names)):
            _, dtype, shape = spec.outputs[j % len(spec.outputs)]
            shapes.append(list(shape))
            dtypes.append(dtype)
        rows.append(rows[-1] + len(names))
    signature = {"inputs": {name: {"id": i, "dtype": d, "shape": list(s)}
                            for i, (name, d, s) in enumerate(spec.inputs)},
                 "outputs": {name: {"id": i, "dtype": d, "shape": list(s)}
                             for i, (name, d, s) in enumerate(spec.outputs)}
                 if spec.signature_outputs else {}}
    return {"nodes": nodes, "arg_nodes": list(range(len(spec.inputs))), "heads": heads,
            "attrs": {"shape": ["list_shape", shapes],
                      "storage_id": ["list_int", list(range(len(shapes)))],
                      "dltype": ["list_str", dtypes]},
            "node_row_ptr": rows, "metadata": {"signatures": {"default": signature}},
            **({"heads": [list(h) for h in spec.heads]} if spec.heads is not None else {})}


def _proto(title: bytes, engine_id: int, records: int = 0) -> bytes:
    """A debug-info message: field 1 its title, 2 a file name, 3 one record per
    instruction, 4 the engine id (protobuf wire format, written by hand)."""
    def length(field: int, data: bytes) -> bytes:
        return _varint(field << 3 | 2) + _varint(len(data)) + data

    record = length(3, b"\x1a\x01j")  # a record holding one small nested field
    return (length(1, title) + length(2, b"debug_info_backend.dbg") + record * records
            + _varint(4 << 3) + _varint(engine_id))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


VARIANTS: dict[str, RealNeff] = {
    "trn2_lnc2": RealNeff(),
    "trn1_lnc1_plain_stripped": RealNeff(
        code_name="sunda", lnc=1, lnc_field=0, compressed=False, major=1, metrics=True,
        hlo_stats=False,
        tool_version="2.4.0.21+b7621be18", debug_info=False, bin_constant=True,
        signature_outputs=True, feature_word=0, inputs=(("input0", "float32", (4, 16)),),
        outputs=(("output0", "float32", (4, 10)), ("output1", "int32", (4,)))),
    "trn3_two_kelfs_no_graph": RealNeff(
        code_name="mariana", lnc=2, kelf_files=2, neff_json=False, hlo_stats=False,
        tool_version=None, extra=(("sg00/mystery.dat", b"\x00" * 40),
                                  ("notes/readme.txt", b"not a NEFF member"))),
}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for variant_name, variant in VARIANTS.items():
        print(write_real_neff(out / f"{variant_name}.neff", variant))
