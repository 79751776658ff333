"""Compile options, as the command line gives them, validated in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.driver.errors import CompileError
from nxcc.errors import BAD_ARGUMENT

TARGETS = ("trn1", "trn1n", "trn2", "inf2", "trn3")
FRAMEWORKS = ("ONNX", "XLA")
EXTENSIONS = {".onnx": "ONNX", ".hlo": "XLA", ".txt": "XLA", ".pb": "XLA", ".mlir": "XLA",
              ".stablehlo": "XLA"}
AUTO_CAST = ("none", "matmult", "all")
AUTO_CAST_TYPES = ("bf16", "fp16", "tf32", "fp8_e4m3")
MODEL_TYPES = ("generic", "transformer", "unet-inference", "transformer-inference",
               "cnn-training")
"""The CLI reference's three, the older reference's transformer-inference and the
cnn-training that AWS's training samples pass: all recorded, none changes the program."""
DISTRIBUTION_STRATEGIES = ("llm-training", "nemo")
NATIVE_INT64 = ("default", "enabled", "disabled")
#: The logical NeuronCore size when -lnc is not given (trn2 combines two physical cores;
#: trn3 is taken to as well: LNC applies to Trn2 and Trn3, and AWS documents no other
#: default for Trn3).
DEFAULT_LNC = {"trn2": 2, "trn3": 2}
#: The targets whose logical cores may span two physical cores (-lnc 2).
LNC2_TARGETS = ("trn2", "trn3")


@dataclass(frozen=True)
class CompileOptions:
    """Everything `compile_model` needs besides the model itself."""

    target: str
    framework: str | None = None
    lnc: int | None = None
    optlevel: int = 2
    output: str = "file.neff"
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    print_ir_after: frozenset[str] = frozenset()
    fast_loading: bool = False
    auto_cast: str = "none"
    auto_cast_type: str = "bf16"
    mixed_precision_accumulation: bool = True
    saturate_infinity: bool = False
    model_type: str = "generic"
    distribution_strategy: str | None = None
    fast_context_switch: bool = False
    native_int64: str = "default"
    implicit_integer_downcast: str = "default"
    #: Flags accepted for compatibility and only recorded (`--internal-*`,
    #: `--tensorizer-options`...), as (name, value or None), in command-line order.
    recorded_flags: tuple[tuple[str, str | None], ...] = ()
    #: `--pipeline ... SaveTemps`: keep the IR after each pass and the manifest in `workdir`.
    save_temps: bool = False
    workdir: str | None = None
    #: `--execute-repetition N`: the caller executes the NEFF N times in a row (recorded).
    execute_repetition: int = 1
    #: `--retry_failed_compilation`: compile again a module the cache remembers failing.
    retry_failed: bool = False

    def __post_init__(self) -> None:
        for flag, value, allowed in (
            ("--auto-cast", self.auto_cast, AUTO_CAST),
            ("--auto-cast-type", self.auto_cast_type, AUTO_CAST_TYPES),
            ("--model-type", self.model_type, MODEL_TYPES),
            ("--native-int64", self.native_int64, NATIVE_INT64),
        ):
            if value not in allowed:
                raise CompileError(BAD_ARGUMENT,
                                   f"{flag} {value!r} is not one of {', '.join(allowed)}")
        if (self.distribution_strategy is not None
                and self.distribution_strategy not in DISTRIBUTION_STRATEGIES):
            raise CompileError(BAD_ARGUMENT, f"--distribution-strategy "
                               f"{self.distribution_strategy!r} is not one of "
                               f"{', '.join(DISTRIBUTION_STRATEGIES)}")
        self._check_core_flags()

    def _check_core_flags(self) -> None:
        if self.target not in TARGETS:
            raise CompileError(BAD_ARGUMENT, f"--target {self.target!r} is not one of "
                               f"{', '.join(TARGETS)}")
        if self.optlevel not in (1, 2, 3):
            raise CompileError(BAD_ARGUMENT, f"-O {self.optlevel} is not one of 1, 2, 3")
        if self.execute_repetition < 1:
            raise CompileError(BAD_ARGUMENT, f"--execute-repetition {self.execute_repetition}"
                               " is not a count of 1 or more")
        if self.lnc is not None and self.lnc not in (1, 2):
            raise CompileError(BAD_ARGUMENT, f"--logical-nc-config {self.lnc} is not 1 or 2")
        if self.lnc == 2 and self.target not in LNC2_TARGETS:
            raise CompileError(
                BAD_ARGUMENT, f"--logical-nc-config 2 is only supported for --target "
                f"{' or '.join(LNC2_TARGETS)}, not {self.target}")

    @property
    def logical_nc_config(self) -> int:
        """The LNC in force: as given, else the target's default (2 on trn2 and trn3, 1
        elsewhere).
        At 2 the model is sharded over the two physical cores of a logical core."""
        if self.lnc is not None:
            return self.lnc
        return DEFAULT_LNC.get(self.target, 1)

    def output_flags(self) -> dict[str, object]:
        """The flags that decide the NEFF's bytes, normalised: spelled one way, defaults
        filled in, settings that cannot matter dropped (`--auto-cast-type` without
        auto-cast), recorded flags sorted. Equal dicts give equal NEFFs for equal modules;
        this is what the compile cache keys on and what the NEFF manifest records.
        Log, output and work-directory flags are not part of it."""
        flags: dict[str, object] = {
            "target": self.target,
            "lnc": self.logical_nc_config,
            "optlevel": self.optlevel,
            "auto_cast": self.auto_cast,
            "mixed_precision_accumulation": self.mixed_precision_accumulation,
            "saturate_infinity": self.saturate_infinity,
            "model_type": self.model_type,
            "distribution_strategy": {"nemo": "llm-training"}.get(
                self.distribution_strategy or "", self.distribution_strategy),
            "fast_loading": self.fast_loading,
            "fast_context_switch": self.fast_context_switch,
            "native_int64": "disabled" if self.native_int64 == "default" else self.native_int64,
            "implicit_integer_downcast": self.implicit_integer_downcast,
            "input_shapes": {k: list(v) for k, v in sorted(self.input_shapes.items())},
            "recorded": sorted([n, v] for n, v in dict(self.recorded_flags).items()),
        }
        if self.auto_cast != "none":
            flags["auto_cast_type"] = self.auto_cast_type
        if self.execute_repetition != 1:
            flags["execute_repetition"] = self.execute_repetition
        return flags


def framework_for(path: str, framework: str | None) -> str:
    """The framework given, or the one the file's extension implies (the driver looks at
    the content first: `driver.detect`)."""
    if framework is not None:
        upper = framework.upper()
        if upper not in FRAMEWORKS:
            raise CompileError(BAD_ARGUMENT, f"--framework {framework!r} is not one of "
                               f"{', '.join(FRAMEWORKS)}")
        return upper
    for ext, fw in EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fw
    raise CompileError(BAD_ARGUMENT, f"cannot tell the framework of {path!r} from its "
                       "extension; give --framework ONNX or --framework XLA")


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """`NAME=D0,D1,...` -> (NAME, dims); CompileError if malformed."""
    name, sep, dims = spec.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        shape = None
    if not sep or not name or shape is None or any(d < 0 for d in shape):
        raise CompileError(BAD_ARGUMENT,
                           f"--input-shape {spec!r} is not NAME=D0,D1,... with sizes >= 0")
    return name, shape
