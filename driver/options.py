"""Compile options, as the command line gives them, validated in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.driver.errors import CompileError

TARGETS = ("trn1", "trn1n", "trn2", "inf2")
FRAMEWORKS = ("ONNX", "XLA")
EXTENSIONS = {".onnx": "ONNX", ".hlo": "XLA", ".txt": "XLA", ".mlir": "XLA", ".stablehlo": "XLA"}
#: The logical NeuronCore size when -lnc is not given (trn2 combines two physical cores).
DEFAULT_LNC = {"trn2": 2}


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

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise CompileError("NCC_EARG001", f"--target {self.target!r} is not one of "
                               f"{', '.join(TARGETS)}")
        if self.optlevel not in (1, 2, 3):
            raise CompileError("NCC_EARG001", f"-O {self.optlevel} is not one of 1, 2, 3")
        if self.lnc is not None and self.lnc not in (1, 2):
            raise CompileError("NCC_EARG001", f"--logical-nc-config {self.lnc} is not 1 or 2")
        if self.lnc == 2 and self.target != "trn2":
            raise CompileError(
                "NCC_EARG001",
                f"--logical-nc-config 2 is only supported for --target trn2, not {self.target}")

    @property
    def logical_nc_config(self) -> int:
        """The LNC in force: as given, else the target's default (2 on trn2, 1 elsewhere).
        At 2 the model is sharded over the two physical cores of a logical core."""
        if self.lnc is not None:
            return self.lnc
        return DEFAULT_LNC.get(self.target, 1)


def framework_for(path: str, framework: str | None) -> str:
    """The framework given, or the one the file's extension implies."""
    if framework is not None:
        upper = framework.upper()
        if upper not in FRAMEWORKS:
            raise CompileError("NCC_EARG001", f"--framework {framework!r} is not one of "
                               f"{', '.join(FRAMEWORKS)}")
        return upper
    for ext, fw in EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fw
    raise CompileError("NCC_EARG001", f"cannot tell the framework of {path!r} from its "
                       "extension; give --framework ONNX or --framework XLA")


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """`NAME=D0,D1,...` -> (NAME, dims); CompileError if malformed."""
    name, sep, dims = spec.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        shape = None  # type: ignore[assignment]
    if not sep or not name or shape is None or any(d < 0 for d in shape):
        raise CompileError("NCC_EARG001",
                           f"--input-shape {spec!r} is not NAME=D0,D1,... with sizes >= 0")
    return name, shape
