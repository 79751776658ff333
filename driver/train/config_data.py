"""The `data` block (and the validation keys of `trainer`): where the tokens come from.

Three sources, the first that is configured:

* `data.data_prefix`: Megatron indexed datasets (`megatron_data`), in NxD's three forms: a
  prefix, the weighted list `[w1, prefix1, w2, prefix2, ...]`, or the dictionary
  `{train: ..., validation: ..., test: ...}` of such lists;
* `data.train_dir` holding a `save_to_disk` dataset (`hf_dataset`), or `.npy` token streams
  (`data`), nxcc's simplest form. `data.val_dir` is the validation data of the same kind.

`data.tokenizer` (`tokenizer`) gives the vocabulary. Validation runs every
`trainer.val_check_interval` steps over `trainer.limit_val_batches` global batches (a count,
or a fraction of the validation batches), when both are set and positive.
Paths are taken from the YAML file's folder when relative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nxcc.driver.train.config_model import resolve_path
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.megatron_data import Blend, MegatronSpec
from nxcc.driver.train.tokenizer import TokenizerConfig

if TYPE_CHECKING:
    from collections.abc import Callable

KEY = "data.data_prefix"
DEFAULT_SPLITS = "969,30,1"  # Megatron's default splits_string


@dataclass(frozen=True)
class ValidationConfig:
    """Validation every `interval` steps (None: never) over `limit` global batches (an int)
    or that fraction of the validation batches (a float)."""

    interval: int | None
    limit: int | float

    @property
    def enabled(self) -> bool:
        return self.interval is not None and self.limit > 0

    def runs(self, max_steps: int) -> int:
        """How many validations a run of `max_steps` makes."""
        return max_steps // self.interval if self.enabled and self.interval else 0


@dataclass(frozen=True)
class DataConfig:
    micro_batch_size: int
    global_batch_size: int
    seq_length: int
    train_dir: str | None
    val_dir: str | None = None
    megatron: MegatronSpec | None = None
    tokenizer: TokenizerConfig | None = None
    eod_mask_loss: bool = False
    validation: ValidationConfig = ValidationConfig(None, 0)

    def micro_batches_per_step(self, dp: int) -> int:
        """Micro-batches each data-parallel rank runs per step."""
        return self.global_batch_size // (self.micro_batch_size * dp)

    @property
    def source(self) -> str:
        """Where the training tokens are: the prefix list or the folder."""
        if self.megatron is not None:
            blend = self.megatron.whole or self.megatron.by_split[0]  # type: ignore[index]
            return ", ".join(p for _, p in blend.parts)
        assert self.train_dir is not None
        return self.train_dir


def _blend(value: object, where: str, base: str) -> Blend:
    """A prefix, `[prefix]` or `[w1, prefix1, ...]`."""
    if isinstance(value, str) and value:
        return Blend(((1.0, resolve_path(value, base)),), False)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return Blend(((1.0, resolve_path(value[0], base)),), False)
    if not isinstance(value, list) or not value or len(value) % 2:
        raise TrainConfigError(where, f"expected a prefix or a list [weight, prefix, "
                                      f"weight, prefix, ...], got {value!r}")
    parts = []
    for weight, prefix in zip(value[0::2], value[1::2], strict=True):
        try:
            w = float(weight) if not isinstance(weight, bool) else math.nan
        except (TypeError, ValueError):
            w = math.nan
        if not math.isfinite(w) or w < 0 or not isinstance(prefix, str) or not prefix:
            raise TrainConfigError(where, f"expected weight, prefix pairs (a non-negative "
                                          f"number, then a path), got {weight!r}, "
                                          f"{prefix!r}")
        parts.append((w, resolve_path(prefix.strip(), base)))
    if sum(w for w, _ in parts) <= 0:
        raise TrainConfigError(where, "the weights sum to 0")
    return Blend(tuple(parts), True)


def megatron_spec(get: Callable[[str], object], base: str) -> MegatronSpec | None:
    """`data.data_prefix` and its companions, or None without a data_prefix."""
    value = get(KEY)
    if value is None:
        return None
    splits = get("data.splits_string")
    index_dir = get("data.index_mapping_dir")
    common = {
        "splits_string": str(splits) if splits is not None else DEFAULT_SPLITS,
        "index_mapping_dir": resolve_path(str(index_dir), base) if index_dir else None,
        "validation_drop_last": get("data.validation_drop_last") is not False,
        "extra": 0 if get("data.no_seqlen_plus_one_input_tokens") else 1}
    if isinstance(value, dict):
        missing = [k for k in ("train", "validation", "test") if value.get(k) is None]
        extra = sorted(set(value) - {"train", "validation", "test"})
        if missing or extra:
            raise TrainConfigError(KEY, "the dictionary form needs exactly the keys train, "
                                        "validation and test" + (
                                            f" (missing {', '.join(missing)})" if missing
                                            else f" (not {', '.join(map(str, extra))})"))
        by = tuple(_blend(value[k], f"{KEY}.{k}", base) for k in ("train", "validation",
                                                                   "test"))
        return MegatronSpec(None, by, **common)  # type: ignore[arg-type]
    return MegatronSpec(_blend(value, KEY, base), None, **common)  # type: ignore[arg-type]


def tokenizer_config(get: Callable[[str], object], base: str) -> TokenizerConfig | None:
    """`data.tokenizer`, or None when the block names no tokenizer."""
    def path(key: str) -> str | None:
        value = get(f"data.tokenizer.{key}")
        return resolve_path(str(value), base) if value else None

    library = get("data.tokenizer.library")
    kind = get("data.tokenizer.type")
    if isinstance(kind, str) and library != "megatron" and (
            kind.startswith((".", "/", "~")) or kind.endswith(".json")):
        kind = resolve_path(kind, base)
    cfg = TokenizerConfig(library if isinstance(library, str) else None,
                          str(kind) if kind is not None else None, path("model"),
                          path("vocab_file"), path("merge_file"))
    names_a_file = cfg.model is not None or cfg.vocab_file is not None or (
        cfg.type is not None and cfg.library not in ("megatron", "sentencepiece"))
    return cfg if names_a_file else None


def validation_config(get: Callable[[str], object]) -> ValidationConfig:
    interval = get("trainer.val_check_interval")
    limit = get("trainer.limit_val_batches")
    return ValidationConfig(interval if isinstance(interval, int) else None,
                            limit if isinstance(limit, int | float) else 0)


def refuse_unbuilt(get: Callable[[str], object]) -> None:
    """The Megatron dataset switches nxcc does not build, refused naming the key."""
    for key, why in (("data.reset_position_ids", "position ids restarting after each "
                      "end-of-document token need position inputs the built-in decoder "
                      "does not take"),
                     ("data.reset_attention_mask", "NxD refuses it too (its Neuron flow "
                      "does not reset the attention mask)")):
        if get(key):
            raise TrainConfigError(key, f"true is not supported: {why}; set it to false")


def data_config(get: Callable[[str], Any], base: str, seq: int, needs_data: bool = True
                ) -> DataConfig:
    """The data block (see the module docstring); `get` gives a key's value of the type its
    spec says. Without `needs_data` (a plan, which reads no data) it need not name the
    training data."""
    refuse_unbuilt(get)
    spec = megatron_spec(get, base)
    train_dir, val_dir = get("data.train_dir"), get("data.val_dir")
    if spec is None and train_dir is None and needs_data:
        raise TrainConfigError("data.train_dir", "is required (or data.data_prefix, "
                               "Megatron indexed datasets): where the training tokens are")
    return DataConfig(
        get("data.micro_batch_size"), get("data.global_batch_size"), seq,
        resolve_path(str(train_dir), base) if train_dir is not None and spec is None
        else None,
        resolve_path(str(val_dir), base) if val_dir is not None else None, spec,
        tokenizer_config(get, base), bool(get("data.eod_mask_loss")),
        validation_config(get))
