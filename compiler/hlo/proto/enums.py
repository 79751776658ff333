"""Names of the XLA enumerations the schema declares as integers (numbers as in
``xla/xla_data.proto`` and ``xla/service/hlo.proto``), spelled as HLO text prints them."""

from __future__ import annotations

#: PrimitiveType -> the element type name of HLO text (TUPLE is handled apart).
PRIMITIVE_TYPES: dict[int, str] = {
    1: "pred", 30: "s1", 26: "s2", 21: "s4", 2: "s8", 3: "s16", 4: "s32", 5: "s64",
    31: "u1", 27: "u2", 22: "u4", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 16: "bf16", 12: "f64",
    19: "f8e5m2", 28: "f8e4m3", 20: "f8e4m3fn", 23: "f8e4m3b11fnuz", 29: "f8e3m4",
    24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 32: "f4e2m1fn", 33: "f8e8m0fnu",
    15: "c64", 18: "c128", 14: "opaque", 17: "token",
}
TUPLE = 13

#: OpSharding.Type
SHARDING_TYPES: dict[int, str] = {
    0: "replicated", 1: "maximal", 2: "tuple", 3: "other", 4: "manual", 5: "unknown",
    6: "unreduced",
}

#: RandomAlgorithm, as `algorithm=` of rng-bit-generator.
RNG_ALGORITHMS: dict[int, str] = {0: "rng_default", 1: "rng_three_fry", 2: "rng_philox"}

#: RandomDistribution, as `distribution=` of rng.
RNG_DISTRIBUTIONS: dict[int, str] = {1: "rng_uniform", 2: "rng_normal"}

#: PrecisionConfig.Precision, as `operand_precision=`.
PRECISIONS: dict[int, str] = {0: "default", 1: "high", 2: "highest"}

#: PrecisionConfig.Algorithm, as `algorithm=` of dot.
DOT_ALGORITHMS: dict[int, str] = {
    1: "alg_dot_any_f8_any_f8_f32", 2: "alg_dot_any_f8_any_f8_f32_fast_accum",
    3: "alg_dot_f16_f16_f16", 4: "alg_dot_f16_f16_f32", 5: "alg_dot_bf16_bf16_bf16",
    6: "alg_dot_bf16_bf16_f32", 7: "alg_dot_bf16_bf16_f32_x3", 8: "alg_dot_bf16_bf16_f32_x6",
    9: "alg_dot_tf32_tf32_f32", 10: "alg_dot_tf32_tf32_f32_x3", 11: "alg_dot_f32_f32_f32",
    12: "alg_dot_f64_f64_f64", 13: "alg_dot_bf16_bf16_f32_x9",
}

#: FftType
FFT_TYPES: dict[int, str] = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}

#: CustomCallApiVersion (API_VERSION_ORIGINAL, the default, is not printed).
API_VERSIONS: dict[int, str] = {
    2: "API_VERSION_STATUS_RETURNING", 3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}

#: HloInputOutputAliasProto kind, as the module header's input_output_alias prints it.
ALIAS_KINDS: dict[int, str] = {0: "may-alias", 1: "may-alias", 2: "must-alias"}
