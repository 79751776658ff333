"""Every flag of `neuronx-cc compile` has its Python spelling in `nxcc.compile`."""

from __future__ import annotations

import pytest

from nxcc.cli.compile_cmd import compile_cmd
from nxcc.driver.api.flags import FLAGS, PIPELINE_STAGES, nearest, parse_flags
from nxcc.driver.recorded_flags import RECORDED_WITH_VALUE
from nxcc.errors import CompileError

#: flags that are keyword parameters of nxcc.compile itself.
PARAMETERS = {"--target": "target", "--output": "output", "--logical-nc-config": "lnc"}


def test_every_command_line_flag_has_a_python_name() -> None:
    spelled = {cli: name for name, (cli, _) in FLAGS.items()}
    missing = []
    for param in compile_cmd.params:
        names = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
        if not names or param.name == "help":
            continue
        if not any(n in spelled or n in PARAMETERS for n in names):
            missing.append(names[0])
    assert missing == [], f"add these to driver/api/flags.py FLAGS: {missing}"
    for name, (cli, _) in FLAGS.items():
        assert cli == "--" + name.replace("_", "-")
    assert set(PIPELINE_STAGES.values()) == {"compile", "tensorize", "SaveTemps"}


def test_recorded_and_refused_flags() -> None:
    parsed = parse_flags({"internal_backend_options": "-O3", "no_internal_foo": True,
                          "pipeline": ["compile", "savetemps"], "input_shape": "x=1,2"})
    assert parsed.recorded == [("--internal-backend-options", "-O3"),
                               ("--no-internal-foo", None)]
    assert parsed.options["save_temps"] is True
    assert parsed.options["input_shapes"] == {"x": (1, 2)}
    assert "--internal-backend-options" in RECORDED_WITH_VALUE
    with pytest.raises(CompileError, match="expected a string"):
        parse_flags({"internal_backend_options": True})
    with pytest.raises(CompileError, match="stages are compile, tensorize, SaveTemps"):
        parse_flags({"pipeline": "everything"})
    assert nearest("no_cach") == "no_cache" and nearest("zzzzzz") in FLAGS
