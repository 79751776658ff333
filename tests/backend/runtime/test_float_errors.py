"""`float_errors.ignore/restore`: floating-point errors ignored between the two, the
caller's error state back afterwards, by numpy's context variable or by np.errstate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nxcc.backend.runtime import float_errors


@pytest.mark.parametrize("public", [False, True], ids=["context-variable", "errstate"])
def test_errors_are_ignored_until_restored(public: bool, monkeypatch) -> None:
    if public:
        monkeypatch.setattr(float_errors, "_VARIABLE", None)
    with np.errstate(divide="raise", over="warn", invalid="warn", under="ignore"):
        before = np.geterr()
        token = float_errors.ignore()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.isinf(np.float32(1) / np.zeros(1, np.float32))[0]
            assert np.isnan(np.zeros(1) / np.zeros(1))[0]
        assert set(np.geterr().values()) == {"ignore"}
        float_errors.restore(token)
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            np.float32(1) / np.zeros(1, np.float32)
