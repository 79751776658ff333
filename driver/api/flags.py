"""`nxcc.compile`'s flags: the command line's, spelled in Python (`--auto-cast matmult` is
`auto_cast="matmult"`, `-O 1` is `optlevel=1`, `--enable-saturate-infinity` is
`enable_saturate_infinity=True`), turned into what the driver needs.

`parse_flags(flags)` checks each name (an unknown one is refused naming the nearest known
one) and the type of its value; the values themselves are checked where the command line's
are (`CompileOptions`, `training_options`), so both refuse them alike. `FLAGS` lists every
flag with its command-line spelling.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from nxcc.driver.errors import CompileError
from nxcc.driver.options import parse_input_shape
from nxcc.driver.recorded_flags import is_recorded_flag, takes_value
from nxcc.errors import BAD_ARGUMENT

PIPELINE_STAGES = {"compile": "compile", "savetemps": "SaveTemps"}
"""`--pipeline` stages by their lower-case name."""


@dataclass
class ParsedFlags:
    """The flags sorted out: `options` (CompileOptions fields), the cache's flags, and the
    training flags (`training_options` keywords; `training` says whether asked)."""

    options: dict[str, object] = field(default_factory=dict)
    recorded: list[tuple[str, str | None]] = field(default_factory=list)
    cache_dir: str | None = None
    no_cache: bool = False
    training: bool = False
    training_flags: dict[str, object] = field(default_factory=dict)


Apply = Callable[[ParsedFlags, str, object], None]


def _bad(name: str, value: object, expected: str) -> CompileError:
    return CompileError(BAD_ARGUMENT, f"flag {name}={value!r}: expected {expected}")


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise _bad(name, value, "a string")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _bad(name, value, "True or False")
    return value


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _bad(name, value, "an integer")
    try:
        return int(value)
    except ValueError:
        raise _bad(name, value, "an integer") from None


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(name, value, "a number")
    return float(value)


def _words(name: str, value: object) -> list[str]:
    """A string, or an iterable of strings."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and all(isinstance(v, str) for v in value):
        return list(value)
    raise _bad(name, value, "a string or a list of strings")


def _shapes(name: str, value: object) -> dict[str, tuple[int, ...]]:
    """`{"x": (1, 3)}`, or the command line's `"x=1,3"` (one or a list of them)."""
    if isinstance(value, Mapping):
        try:
            return {str(k): tuple(int(d) for d in v) for k, v in value.items()}
        except (TypeError, ValueError):
            raise _bad(name, value, "a mapping of input names to sizes") from None
    return dict(parse_input_shape(s) for s in _words(name, value))


def _option(key: str, convert: Callable[[str, object], object]) -> Apply:
    def apply(parsed: ParsedFlags, name: str, value: object) -> None:
        parsed.options[key] = convert(name, value)
    return apply


def _lower(name: str, value: object) -> str:
    return _text(name, value).lower()


def _pipeline(parsed: ParsedFlags, name: str, value: object) -> None:
    stages = []
    for word in _words(name, value):
        stage = PIPELINE_STAGES.get(word.lower())
        if stage is None:
            raise CompileError(BAD_ARGUMENT, f"{name} {word!r}: stages are "
                               f"{', '.join(PIPELINE_STAGES.values())}")
        stages.append(stage)
    parsed.options["save_temps"] = "SaveTemps" in stages


def _cache_dir(parsed: ParsedFlags, name: str, value: object) -> None:
    parsed.cache_dir = _text(name, value)


def _no_cache(parsed: ParsedFlags, name: str, value: object) -> None:
    parsed.no_cache = _flag(name, value)


def _training(parsed: ParsedFlags, name: str, value: object) -> None:
    parsed.training = _flag(name, value)


def _step(convert: Callable[[str, object], object]) -> Apply:
    def apply(parsed: ParsedFlags, name: str, value: object) -> None:
        parsed.training_flags[name] = convert(name, value)
    return apply


def _accepted(parsed: ParsedFlags, name: str, value: object) -> None:
    if _int(name, value) < 1:
        raise _bad(name, value, "an integer >= 1")


def _logging(parsed: ParsedFlags, name: str, value: object) -> None:
    raise CompileError(BAD_ARGUMENT, f"flag {name} sets the command line's logging; from "
                       "Python configure the 'nxcc' logger (logging.getLogger('nxcc'))")


def _betas(name: str, value: object) -> str:
    if isinstance(value, tuple | list) and len(value) == 2:
        return ",".join(str(_number(name, v)) for v in value)
    return _text(name, value)


def _names(name: str, value: object) -> str:
    return ",".join(_words(name, value))


def _neg(key: str) -> Apply:
    def apply(parsed: ParsedFlags, name: str, value: object) -> None:
        parsed.options[key] = not _flag(name, value)
    return apply


#: Python name -> (the command line's spelling, how the value is taken).
FLAGS: dict[str, tuple[str, Apply]] = {
    "framework": ("--framework", _option("framework", lambda n, v: _text(n, v).upper())),
    "optlevel": ("--optlevel", _option("optlevel", _int)),
    "auto_cast": ("--auto-cast", _option("auto_cast", _lower)),
    "auto_cast_type": ("--auto-cast-type", _option("auto_cast_type", _lower)),
    "enable_mixed_precision_accumulation": ("--enable-mixed-precision-accumulation",
                                            _option("mixed_precision_accumulation", _flag)),
    "disable_mixed_precision_accumulation": ("--disable-mixed-precision-accumulation",
                                             _neg("mixed_precision_accumulation")),
    "enable_saturate_infinity": ("--enable-saturate-infinity",
                                 _option("saturate_infinity", _flag)),
    "model_type": ("--model-type", _option("model_type", _lower)),
    "distribution_strategy": ("--distribution-strategy",
                              _option("distribution_strategy", _lower)),
    "native_int64": ("--native-int64", _option("native_int64", _lower)),
    "implicit_integer_downcast": ("--implicit-integer-downcast",
                                  _option("implicit_integer_downcast", _text)),
    "enable_fast_context_switch": ("--enable-fast-context-switch",
                                   _option("fast_context_switch", _flag)),
    "enable_fast_loading_neuron_binaries": ("--enable-fast-loading-neuron-binaries",
                                            _option("fast_loading", _flag)),
    "input_shape": ("--input-shape", _option("input_shapes", _shapes)),
    "print_ir_after": ("--print-ir-after",
                       _option("print_ir_after", lambda n, v: frozenset(_words(n, v)))),
    "pipeline": ("--pipeline", _pipeline),
    "workdir": ("--workdir", _option("workdir", _text)),
    "cache_dir": ("--cache-dir", _cache_dir),
    "no_cache": ("--no-cache", _no_cache),
    "jobs": ("--jobs", _accepted),
    "num_parallel_jobs": ("--num-parallel-jobs", _accepted),
    "verbose": ("--verbose", _logging),
    "logfile": ("--logfile", _logging),
    "training": ("--training", _training),
}
#: The flags of a training step (with `training=True`).
STEP_FLAGS: dict[str, tuple[str, Apply]] = {
    "loss": ("--loss", _step(_text)),
    "loss_input": ("--loss-input", _step(_text)),
    "label_input": ("--label-input", _step(_text)),
    "optimizer": ("--optimizer", _step(_text)),
    "lr": ("--lr", _step(_number)),
    "weight_decay": ("--weight-decay", _step(_number)),
    "betas": ("--betas", _step(_betas)),
    "eps": ("--eps", _step(_number)),
    "momentum": ("--momentum", _step(_number)),
    "nesterov": ("--nesterov", _step(_flag)),
    "clip_grad_norm": ("--clip-grad-norm", _step(_number)),
    "warmup_steps": ("--warmup-steps", _step(_int)),
    "decay": ("--decay", _step(_text)),
    "max_steps": ("--max-steps", _step(_int)),
    "trainable": ("--trainable", _step(_names)),
    "output_grad_norm": ("--output-grad-norm", _step(_flag)),
    "mixed_precision": ("--mixed-precision", _step(_text)),
    "bf16_weights": ("--bf16-weights", _step(_flag)),
    "stochastic_rounding": ("--stochastic-rounding", _step(_flag)),
}
FLAGS.update(STEP_FLAGS)


def parse_flags(flags: Mapping[str, object]) -> ParsedFlags:
    """The flags sorted out (see the module docstring); CompileError NCC_EARG001 for an
    unknown name (naming the nearest), a value of the wrong type, or a training flag
    without `training=True`."""
    parsed = ParsedFlags()
    for name, value in flags.items():
        spelled = "--" + name.replace("_", "-")
        if name in FLAGS:
            FLAGS[name][1](parsed, name, value)
        elif is_recorded_flag(spelled):
            parsed.recorded.append((spelled, _recorded_value(name, spelled, value)))
        else:
            raise CompileError(BAD_ARGUMENT, f"unknown flag {name!r}; the nearest is "
                               f"{nearest(name)!r}")
    given = [n for n in STEP_FLAGS if n in flags]
    if given and not parsed.training:
        raise CompileError(BAD_ARGUMENT, f"flag {given[0]} needs training=True")
    return parsed


def nearest(name: str) -> str:
    """The known flag whose name is closest to `name`."""
    known = list(FLAGS)
    return (difflib.get_close_matches(name, known, n=1, cutoff=0.0) or known)[0]


def _recorded_value(name: str, spelled: str, value: object) -> str | None:
    """A recorded flag's value: text for one that takes a value, else True (a switch)."""
    if takes_value(spelled):
        return _text(name, value)
    if value is True:
        return None
    return _text(name, value)
