"""A typed-FFI custom call's `backend_config` as an MLIR attribute dictionary, and JAX 0.10's
`jnp.linalg.cholesky` refused as an unsupported custom call in one line.

`unsupported/cholesky_jax010.hlo` is written by hand in the form JAX 0.10 prints
`jax.jit(jnp.linalg.cholesky).lower(x).as_text(dialect="hlo")` for a f32[4,4] on CPU
(symmetrize, the LAPACK `lapack_spotrf_ffi` typed-FFI call with `backend_config={uplo = 76
: ui8}`, NaN where `info != 0`, the lower triangle): JAX is not needed here.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from nxcc.compiler.hlo import HloError, import_hlo
from nxcc.compiler.hlo.attributes import parse_attribute
from nxcc.compiler.hlo.mlir_attrs import parse_mlir_dict
from nxcc.ir.sharding_notation.cursor import PieceError
from tests.compiler.hlo.proto.proto_builders import (
    F32,
    S32,
    TUPLE,
    computation,
    instr,
    module,
    shape,
)
from tests.inprocess import assert_clean_error, run_cli

FIXTURE = Path(__file__).resolve().parent / "unsupported" / "cholesky_jax010.hlo"


@pytest.mark.parametrize(("text", "want"), [
    ("{uplo = 76 : ui8}", {"uplo": 76}),
    ("{}", {}),
    ('{a = -1 : i64, b = 2.5 : f32, c = "s", d = [1, 2], flag, e = true, "q n" = 0x10 : i32}',
     {"a": -1, "b": 2.5, "c": "s", "d": (1, 2), "flag": True, "e": True, "q n": 16}),
    ("{e = array<i64: 1, 2>, f = dense<[1, 2]> : tensor<2xi64>, g = {h = 3 : i32}}",
     {"e": "array<i64: 1, 2>", "f": "dense<[1, 2]> : tensor<2xi64>", "g": {"h": 3}}),
    ("{t = (i32) -> f32, m = #mhlo<precision DEFAULT>}",
     {"t": "(i32) -> f32", "m": "#mhlo<precision DEFAULT>"}),
])
def test_mlir_dictionaries(text: str, want: dict) -> None:
    got = parse_mlir_dict(text)
    assert isinstance(got, MappingProxyType)
    assert _plain(got) == want
    assert _plain(parse_attribute("backend_config", text)) == want  # type: ignore[arg-type]


def _plain(value: object) -> object:
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, MappingProxyType) \
        else value


@pytest.mark.parametrize("text", ["{uplo = }", "{uplo = 76 : ui8", "{uplo 76}",
                                  "{a = array<i64: 1}"])
def test_malformed_dictionaries_are_refused(text: str) -> None:
    with pytest.raises(PieceError):
        parse_mlir_dict(text)


def test_json_and_strings_still_read() -> None:
    assert parse_attribute("backend_config", '{"a": 1}') == {"a": 1}
    assert parse_attribute("backend_config", '"opaque bytes"') == "opaque bytes"


def _proto_cholesky() -> bytes:
    """The fixture's custom call as an HloModuleProto (the same target and backend_config)."""
    call_shape = shape(TUPLE, ())
    call_shape.tuple_shapes.extend([shape(F32, (4, 4), (0, 1)), shape(S32, ())])
    instrs = [instr(1, "x.1", "parameter", shape(F32, (4, 4))),
              instr(2, "cholesky.1", "custom-call", call_shape, (1,),
                    custom_call_target="lapack_spotrf_ffi",
                    backend_config=b"{uplo = 76 : ui8}"),
              instr(3, "get-tuple-element.1", "get-tuple-element", shape(F32, (4, 4), (0, 1)),
                    (2,), tuple_index=0)]
    return module([computation(1, "main.1", instrs, 3)], 1, "jit_cholesky").SerializeToString()


def test_text_and_proto_are_refused_alike() -> None:
    with pytest.raises(HloError) as from_text:
        import_hlo(FIXTURE.read_text(), str(FIXTURE))
    with pytest.raises(HloError) as from_proto:
        import_hlo(_proto_cholesky(), "cholesky.hlo.pb")
    text, proto = from_text.value, from_proto.value
    assert text.code == proto.code == "NCC_EHCA005"
    assert text.message == proto.message
    assert "'lapack_spotrf_ffi'" in text.message
    line = FIXTURE.read_text().splitlines()[9]  # the caret is under the target's value
    assert text.line == 10 and line[text.column - 1:].startswith('"lapack_spotrf_ffi"')


def test_cli_refuses_cholesky_in_one_line_and_shows_where_at_info(tmp_path: Path) -> None:
    args = ["compile", str(FIXTURE), "--target", "trn1", "--output", str(tmp_path / "c.neff"),
            "--logfile", str(tmp_path / "log.txt")]
    quiet = run_cli(*args)
    line = assert_clean_error(quiet, "NCC_EHCA005", "lapack_spotrf_ffi", f"{FIXTURE}:10:")
    assert quiet.stderr.strip() == line and quiet.status == 1
    assert not (tmp_path / "c.neff").exists()
    assert 'custom_call_target="lapack_spotrf_ffi"' in (tmp_path / "log.txt").read_text()
    verbose = run_cli(*args, "--verbose", "info", "--no-cache")
    assert_clean_error(verbose, "NCC_EHCA005")
    after = verbose.stderr.split(line, 1)[1]
    assert "backend_config={uplo = 76 : ui8}" in after and after.rstrip().endswith("^")


def test_a_known_target_with_a_dictionary_config_compiles(tmp_path: Path) -> None:
    hlo = tmp_path / "placed.hlo"
    hlo.write_text(
        "HloModule m\n\nENTRY main.1 {\n  x.1 = f32[4]{0} parameter(0)\n"
        "  ROOT c.1 = f32[4]{0} custom-call(x.1), custom_call_target=\"MoveToDevice\", "
        "api_version=API_VERSION_TYPED_FFI, backend_config={memory_kind = \"device\", "
        "level = 1 : i32}\n}\n")
    outcome = run_cli("compile", str(hlo), "--target", "trn1", "--output",
                      str(tmp_path / "p.neff"), "--logfile", str(tmp_path / "l"))
    assert outcome.status == 0 and "Compiler status PASS" in outcome.stdout, outcome.stderr
