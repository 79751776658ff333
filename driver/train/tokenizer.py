"""The vocabulary a `data.tokenizer` block describes: its size and end-of-document id.

NxD (through NeMo's `get_nmt_tokenizer`) builds a tokenizer from the block; nxcc trains on
token ids, so it needs only what the model and the data depend on: the number of ids (the
embedding's rows) and the end-of-document id (`data.eod_mask_loss`). Read from the files,
never downloaded:

* `library: megatron`, `type: GPT2BPETokenizer`: `vocab_file` is GPT-2's `vocab.json`
  (token -> id) and `merge_file` its `merges.txt`; the size is the number of tokens, the
  end of document `<|endoftext|>`.
* `library: huggingface`, `type`: a tokenizer folder saved by `save_pretrained` (its
  `tokenizer.json`, else `vocab.json` or a SentencePiece `tokenizer.model`, with
  `added_tokens.json` / `tokenizer_config.json`'s added tokens), or a `tokenizer.json`
  file; the size is the highest id + 1 over the vocabulary and the added tokens (`len(
  tokenizer)` of a contiguous vocabulary), the end of document `tokenizer_config.json`'s
  `eos_token`.
* `library: sentencepiece`, `model`: a SentencePiece model file; the size is its number of
  pieces, the end of document its trainer spec's `eos_id` (sentencepiece_model.proto:
  `ModelProto.pieces` = field 1, `trainer_spec` = field 2, `TrainerSpec.eos_id` = field 42,
  default 2).

`padded_vocab_size` pads a size as Megatron and NxD do: up to a multiple of
`make_vocab_size_divisible_by` x the tensor-parallel size.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from nxcc.driver.train.errors import TrainConfigError

MAX_FILE_BYTES = 1 << 30  # a tokenizer file larger than this is not one
GPT2_EOD = "<|endoftext|>"


@dataclass(frozen=True)
class TokenizerConfig:
    """The `data.tokenizer` block's keys nxcc reads (paths already resolved)."""

    library: str | None
    type: str | None
    model: str | None
    vocab_file: str | None
    merge_file: str | None


@dataclass(frozen=True)
class Vocabulary:
    """`size` ids, the end-of-document id (None when the tokenizer names none), and the
    file it was read from."""

    size: int
    eod_id: int | None
    source: str


def padded_vocab_size(size: int, divisible_by: int, tp: int) -> int:
    """`size` rounded up to a multiple of `divisible_by * tp` (Megatron's padding)."""
    multiple = divisible_by * tp
    return -(-size // multiple) * multiple


def _regular(path: str, key: str) -> None:
    """Refuse what is not a regular file (a folder, a device such as /dev/zero)."""
    if not os.path.isfile(path):
        what = "does not exist" if not os.path.exists(path) else "is not a regular file"
        raise TrainConfigError(key, f"{path} {what}")


def _read_json(path: str, key: str) -> object:
    _regular(path, key)
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise TrainConfigError(key, f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB: "
                                        "not a tokenizer file")
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise TrainConfigError(key, f"cannot read {path} ({exc.strerror})") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise TrainConfigError(key, f"{path} is not JSON ({str(exc)[:80]})") from None


def _token_ids(vocab: object, path: str, key: str) -> dict[str, int]:
    """token -> id of a vocabulary written as a mapping (BPE, WordPiece) or as a list of
    [piece, score] pairs (Unigram, ids in order)."""
    if isinstance(vocab, dict) and all(isinstance(v, int) and not isinstance(v, bool)
                                       and v >= 0 for v in vocab.values()):
        return {str(k): v for k, v in vocab.items()}
    if isinstance(vocab, list) and all(isinstance(e, list) and e and isinstance(e[0], str)
                                       for e in vocab):
        return {e[0]: i for i, e in enumerate(vocab)}
    raise TrainConfigError(key, f"{path}: the vocabulary is neither a mapping of tokens to "
                                "non-negative ids nor a list of [piece, score] pairs")


def _gpt2(cfg: TokenizerConfig) -> Vocabulary:
    key = "data.tokenizer.vocab_file"
    if cfg.type not in (None, "GPT2BPETokenizer"):
        raise TrainConfigError("data.tokenizer.type", f"{cfg.type!r}: nxcc reads the megatron "
                               "library's GPT2BPETokenizer files (vocab_file and merge_file)")
    if cfg.vocab_file is None:
        raise TrainConfigError(key, "is required with library megatron (GPT-2's vocab.json)")
    if cfg.merge_file is not None and not os.path.isfile(cfg.merge_file):
        raise TrainConfigError("data.tokenizer.merge_file", f"no such file: {cfg.merge_file}")
    ids = _token_ids(_read_json(cfg.vocab_file, key), cfg.vocab_file, key)
    if not ids:
        raise TrainConfigError(key, f"{cfg.vocab_file} holds no tokens")
    return Vocabulary(max(ids.values()) + 1, ids.get(GPT2_EOD), cfg.vocab_file)


def _added_tokens(folder: str, key: str) -> dict[str, int]:
    """The added tokens a tokenizer folder lists outside its vocabulary file."""
    out: dict[str, int] = {}
    path = os.path.join(folder, "added_tokens.json")
    if os.path.isfile(path):
        data = _read_json(path, key)
        if isinstance(data, dict):
            out.update(_token_ids(data, path, key))
    path = os.path.join(folder, "tokenizer_config.json")
    if os.path.isfile(path):
        data = _read_json(path, key)
        decoder = data.get("added_tokens_decoder") if isinstance(data, dict) else None
        if isinstance(decoder, dict):
            for index, entry in decoder.items():
                if str(index).isdigit() and isinstance(entry, dict):
                    out[str(entry.get("content"))] = int(index)
    return out


def _eos_name(folder: str, key: str) -> str | None:
    path = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isfile(path):
        return None
    data = _read_json(path, key)
    eos = data.get("eos_token") if isinstance(data, dict) else None
    if isinstance(eos, dict):
        eos = eos.get("content")
    return eos if isinstance(eos, str) else None


def _tokenizer_json(path: str, key: str) -> dict[str, int]:
    data = _read_json(path, key)
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise TrainConfigError(key, f"{path} is not a tokenizers file (no 'model' block)")
    ids = _token_ids(data["model"].get("vocab"), path, key)
    for entry in data.get("added_tokens") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int):
            ids[str(entry.get("content"))] = entry["id"]
    return ids


def _huggingface(cfg: TokenizerConfig) -> Vocabulary:
    key = "data.tokenizer.type"
    where = cfg.type
    if where is None:
        raise TrainConfigError(key, "is required with library huggingface (a tokenizer "
                                    "folder or tokenizer.json)")
    if os.path.isfile(where):
        folder, ids = os.path.dirname(where), _tokenizer_json(where, key)
    elif os.path.isdir(where):
        folder = where
        sp_model = os.path.join(folder, "tokenizer.model")
        found = [n for n in ("tokenizer.json", "vocab.json") if
                 os.path.isfile(os.path.join(folder, n))]
        if not found and os.path.isfile(sp_model):
            return _sentencepiece_folder(folder, sp_model, key)
        if not found:
            raise TrainConfigError(key, f"{folder} holds no tokenizer.json, vocab.json or "
                                        "tokenizer.model")
        path = os.path.join(folder, found[0])
        ids = _tokenizer_json(path, key) if found[0] == "tokenizer.json" else \
            _token_ids(_read_json(path, key), path, key)
    else:
        raise TrainConfigError(key, f"{where!r} is no tokenizer folder or file on this "
                                    "machine (nxcc reads tokenizer files; it downloads "
                                    "nothing: save the tokenizer with save_pretrained)")
    ids.update(_added_tokens(folder, key))
    if not ids:
        raise TrainConfigError(key, f"{where} holds no tokens")
    eos = _eos_name(folder, key)
    return Vocabulary(max(ids.values()) + 1, ids.get(eos) if eos else None, where)


def _sentencepiece_folder(folder: str, model: str, key: str) -> Vocabulary:
    """A slow tokenizer's folder: its SentencePiece model and the added tokens."""
    pieces, eos = sentencepiece_model(model, key)
    added = _added_tokens(folder, key)
    size = max([pieces - 1, *added.values()]) + 1
    return Vocabulary(size, eos if 0 <= eos < pieces else None, folder)


def _varint(data: bytes, at: int, path: str, key: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise TrainConfigError(key, f"{path} is not a SentencePiece model (a truncated "
                                        "or overlong varint)")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes, path: str, key: str) -> list[tuple[int, int, object]]:
    """(field number, wire type, value: an int or the bytes of a length-delimited field)
    of one protobuf message."""
    out: list[tuple[int, int, object]] = []
    at = 0
    while at < len(data):
        tag, at = _varint(data, at, path, key)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(data, at, path, key)
            out.append((field, wire, value))
        elif wire == 2:
            size, at = _varint(data, at, path, key)
            if at + size > len(data):
                raise TrainConfigError(key, f"{path} is not a SentencePiece model (a field "
                                            "runs past the end)")
            out.append((field, wire, data[at:at + size]))
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise TrainConfigError(key, f"{path} is not a SentencePiece model (wire type "
                                        f"{wire})")
    return out


def sentencepiece_model(path: str, key: str) -> tuple[int, int]:
    """(number of pieces, eos id) of a SentencePiece model file."""
    _regular(path, key)
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise TrainConfigError(key, f"{path} is too large to be a SentencePiece model")
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TrainConfigError(key, f"cannot read {path} ({exc.strerror})") from None
    fields = _fields(data, path, key)
    pieces = sum(1 for number, wire, _ in fields if number == 1 and wire == 2)
    if not pieces:
        raise TrainConfigError(key, f"{path} is not a SentencePiece model (no pieces)")
    eos = 2
    for number, wire, value in fields:
        if number == 2 and wire == 2:
            assert isinstance(value, bytes)
            for g, v, inner in _fields(value, path, key):
                if g == 42 and v == 0:
                    assert isinstance(inner, int)
                    eos = inner - (1 << 64) if inner >= 1 << 63 else inner
    return pieces, eos


def _sentencepiece(cfg: TokenizerConfig) -> Vocabulary:
    key = "data.tokenizer.model"
    if cfg.model is None:
        raise TrainConfigError(key, "is required with library sentencepiece")
    pieces, eos = sentencepiece_model(cfg.model, key)
    return Vocabulary(pieces, eos if 0 <= eos < pieces else None, cfg.model)


def library_of(cfg: TokenizerConfig) -> str:
    """The library named, else the one the files suggest."""
    if cfg.library is not None:
        return cfg.library
    if cfg.vocab_file is not None:
        return "megatron"
    if cfg.model is not None:
        return "sentencepiece"
    return "huggingface"


def read_vocabulary(cfg: TokenizerConfig) -> Vocabulary:
    """The vocabulary of the tokenizer `cfg` describes (see the module docstring);
    TrainConfigError naming the key whose file is missing or malformed."""
    return {"megatron": _gpt2, "huggingface": _huggingface,
            "sentencepiece": _sentencepiece}[library_of(cfg)](cfg)
