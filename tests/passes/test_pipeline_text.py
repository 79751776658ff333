"""Pipeline texts: every registered pass builds from its name, its options written and read
back give the same pass, and a wrong text is one line saying what is wrong."""

from __future__ import annotations

import dataclasses

import pytest

from nxcc.passes.pipeline_text import PassSpec, PipelineError, option_types, parse_pipeline
from nxcc.passes.registry import (
    CORE_PIPELINE,
    PASSES,
    PIPELINES,
    build_pipeline,
    pipeline_text,
    precision_passes,
    sharding_pipeline,
)

#: a value of each option type that differs from any default
SAMPLES: dict[object, object] = {int: 3, float: 0.25, bool: False, str: "all",
                                 tuple[str, ...]: ("w", "b.0"), tuple[int, ...]: (1, 2)}


@pytest.mark.parametrize("name", sorted(PASSES))
def test_every_registered_name_builds_and_round_trips(name: str) -> None:
    cls = PASSES[name]
    (plain,) = build_pipeline(name)
    assert type(plain) is cls and plain.name == name
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert pipeline_text([plain]) == name
    options = {key: SAMPLES[kind] for key, kind in option_types(cls).items()}
    if name == "auto-cast":
        options["cast_type"] = "fp16"
    full = cls(**options)
    text = pipeline_text([full])
    assert build_pipeline(text) == [full], text
    assert build_pipeline(pipeline_text(build_pipeline(text))) == [full]


def test_the_option_forms() -> None:
    (diff,) = build_pipeline('differentiate{wrt=w,"a b",x.1 loss=2}')
    assert diff == PASSES["differentiate"](wrt=("w", "a b", "x.1"), loss=2)  # type: ignore[call-arg]
    assert pipeline_text([diff]) == 'differentiate{wrt=w,"a b",x.1 loss=2}'
    (empty,) = build_pipeline("differentiate{wrt= loss=0}")
    assert empty == PASSES["differentiate"]()
    assert parse_pipeline(" fold , shard-partition{ num_cores=4 } ") == [
        PassSpec("fold"), PassSpec("shard-partition", (("num_cores", ("4",)),))]
    assert parse_pipeline("") == []


def test_the_compilers_pipelines_are_texts() -> None:
    for text in (*PIPELINES.values(), CORE_PIPELINE):
        assert pipeline_text(build_pipeline(text)) == text
    assert pipeline_text(sharding_pipeline(4)) == (
        "shard-split-fused,fold,dce,shard-choose{num_cores=4},shard-propagate{num_cores=4},"
        "shard-partition{num_cores=4},cse,latency-hiding")
    assert pipeline_text(precision_passes("all", "fp16", False, True)) == (
        "auto-cast{mode=all cast_type=fp16 accumulate_fp32=false},saturate-infinity")
    assert precision_passes("none", "bf16", True, False) == []


@pytest.mark.parametrize(("text", "message"), [
    ("fold,frobnicate", "no pass named 'frobnicate' (passes: auto-cast, cse, dce"),
    ("shard-partition{cores=2}", "pass shard-partition has no option 'cores' "
                                 "(options: num_cores)"),
    ("shard-partition{num_cores=two}", "option 'num_cores' takes integer, got 'two'"),
    ("shard-partition{num_cores=1,2}", "option 'num_cores' takes one integer, got 2 values"),
    ("auto-cast{accumulate_fp32=yes}", "option 'accumulate_fp32' takes true or false"),
    ("auto-cast{mode=some}", "pass auto-cast: mode 'some' is not one of none, matmult, all"),
    ("fold,", "expected a pass name at column 6, found the end"),
    ("fold{", "expected an option name or '}' at column 6"),
    ("shard-partition{num_cores=2", "expected a space or '}' at column 28"),
    ("shard-partition{num_cores=2 num_cores=3}", "option 'num_cores' of shard-partition "
                                                 "given twice"),
    ("fold cse", "expected ',' at column 6"),
    ('differentiate{wrt="w}', "expected a closed JSON string"),
])
def test_a_wrong_text_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PipelineError) as info:
        build_pipeline(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
