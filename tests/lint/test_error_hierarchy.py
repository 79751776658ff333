"""Every exception class of nxcc is either one of the family users see (`nxcc.errors.Error`,
carrying a code) or an internal one that a named place turns into one of the family before it
reaches a user. A new exception class must choose, here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nxcc
from nxcc import errors

LAYERS = ("backend", "cli", "compiler", "driver", "ir", "nxd", "passes")

#: internal exception -> where it becomes an `nxcc.Error` (or why no user can meet it).
INTERNAL = {
    "nxcc.backend.runtime.channels.ChannelsAborted": "an ExecutionError (below)",
    "nxcc.backend.runtime.channels.RankLost": "NrtError(FAILURE) in mpi_job and spmd",
    "nxcc.backend.runtime.executor.ExecutionError": "NrtError(FAILURE) in model and spmd",
    "nxcc.backend.runtime.executor.ExecutionStopped": "NrtError(TIMEOUT) in handle",
    "nxcc.backend.runtime.multicore.CollectiveMismatch": "an ExecutionError (above)",
    "nxcc.backend.runtime.spmd_layout.LayoutError": "NrtError(INVALID) in spmd",
    "nxcc.backend.runtime.spmd_layout.OutputsDisagree": "NrtError(FAILURE) in spmd",
    "nxcc.backend.runtime.program_check.ProgramProblem": "NeffError in validate_program",
    "nxcc.backend.neff.json_schema.SchemaError": "NeffError(NRT_ENEFF002) in schema",
    "nxcc.backend.userfiles.regular.UserFileError": "each reader's caller: NrtError in "
    "runtime.npz, TrainConfigError or CheckpointError in driver.train, a miss in the cache",
    "nxcc.backend.userfiles.structured._Refused": "UserFileError in load_yaml_text",
    "nxcc.compiler.hlo.proto.literals.LiteralError": "HloError in hlo.proto.to_nodes",
    "nxcc.compiler.hlo.proto.shapes.ShapeError": "HloError in hlo.proto.to_nodes",
    "nxcc.compiler.hlo.proto.text_forms.ProtoFieldError": "HloError in hlo.proto.to_nodes",
    "nxcc.driver.train.ranks.RankFailed": "CompileError(NCC_ETRN003) in driver.train.run",
    "nxcc.driver.train.hf_weights.HFMappingError": "TrainConfigError in hf_checkpoint",
    "nxcc.driver.train.safetensors_io.SafetensorsError": "TrainConfigError in hf_checkpoint",
    "nxcc.nxd.model.ModelError": "TrainConfigError in driver.train (model_build, module_model)",
    "nxcc.nxd.models.decoder.config.DecoderError": "TrainConfigError in driver.train",
    "nxcc.nxd.step.loss.StepError": "CompileError in driver.train.compile_step, TrainConfigError "
    "in driver.train.onnx_stage",
    "nxcc.ir.fused_program.FusedProgramError": "a VerificationError in ir.ops.fused",
    "nxcc.ir.parser.IRParseError": "the IR text of tests and tools; no user input is IR text",
    "nxcc.ir.sharding_notation.cursor.PieceError": "HloError or NrtError where notation is read",
    "nxcc.ir.opdef.TypeRuleError": "HloError, FrontendError or VerificationError",
    "nxcc.ir.verifier.VerificationError": "PassFailure (below)",
    "nxcc.passes.manager.PassFailure": "CompileError(NCC_EVRF064) in the driver",
    "nxcc.passes.autodiff.backprop.GradientError": "CompileError(NCC_EUOC002) in the driver",
    "nxcc.passes.autodiff.losses.LossError": "CompileError in the driver",
}

SKIP = {"nxcc.cli.rank_shim", "nxcc.__main__"}  # entry points: importing them runs them


def _exception_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for layer in LAYERS:
        package = importlib.import_module(f"nxcc.{layer}")
        for info in pkgutil.walk_packages(package.__path__, f"nxcc.{layer}."):
            if info.name in SKIP:
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, Exception) and cls.__module__ == info.name:
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_is_in_the_family_or_named_internal() -> None:
    classes = _exception_classes()
    outside = sorted(name for name, cls in classes.items()
                     if not issubclass(cls, errors.Error) and name not in INTERNAL)
    assert outside == [], ("derive these from nxcc.errors.Error (with a code) or list them in "
                           f"INTERNAL with where they are converted: {outside}")
    assert sorted(set(INTERNAL) - set(classes)) == []  # no stale entries
    family = {name for name, cls in classes.items() if issubclass(cls, errors.Error)}
    assert {"nxcc.compiler.onnx.errors.FrontendError", "nxcc.compiler.hlo.errors.HloError",
            "nxcc.backend.runtime.config.ConfigError",
            "nxcc.driver.train.errors.TrainConfigError"} <= family


def test_the_family_is_exported() -> None:
    assert nxcc.Error is errors.Error
    assert issubclass(nxcc.CompileError, nxcc.Error) and issubclass(nxcc.NrtError, nxcc.Error)
    assert issubclass(nxcc.NeffError, nxcc.Error)
