"""compiler_args (neuronx-cc flags, as torch_neuronx takes them) to nxcc.compile keywords."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the torch extra is not installed (pip install '.[torch]')")

from nxcc.errors import BAD_ARGUMENT  # noqa: E402
from nxcc.torch.compiler_args import CompilerArgsError, compiler_flags  # noqa: E402


def test_a_string_is_split_as_a_shell_does() -> None:
    assert compiler_flags("--target trn2 --lnc 1 --auto-cast none -O1") == {
        "target": "trn2", "lnc": 1, "auto_cast": "none", "optlevel": "1"}
    assert compiler_flags("--model-type 'transformer'") == {"model_type": "transformer"}


def test_a_list_spellings_switches_and_repeats() -> None:
    assert compiler_flags(["--target=trn1", "-O", "3", "--enable-saturate-infinity",
                           "--input-shape", "x=1,2", "--input-shape", "y=3",
                           "--logical-nc-config", "2", "-o", "m.neff"]) == {
        "target": "trn1", "optlevel": "3", "enable_saturate_infinity": True,
        "input_shape": ["x=1,2", "y=3"], "lnc": 2, "output": "m.neff"}
    assert compiler_flags(["-lnc=2", "--enable-fast-loading-neuron-binaries",
                           "--pipeline", "compile", "SaveTemps"]) == {
        "lnc": 2, "enable_fast_loading_neuron_binaries": True,
        "pipeline": ["compile", "SaveTemps"]}
    assert compiler_flags(None) == {} and compiler_flags("") == {}


@pytest.mark.parametrize("args,fragment", [("trn1", "'trn1' is not a flag"),
                                           (["-"], "'-' is not a flag"),
                                           ("-- --target", "'--' is not a flag"),
                                           ("--lnc two", "--lnc takes 1 or 2, not 'two'"),
                                           ("--lnc", "--lnc takes 1 or 2, not True")])
def test_what_is_no_flag_is_refused(args: str | list[str], fragment: str) -> None:
    with pytest.raises(CompilerArgsError) as err:
        compiler_flags(args)
    assert err.value.code == BAD_ARGUMENT and fragment in str(err.value)
