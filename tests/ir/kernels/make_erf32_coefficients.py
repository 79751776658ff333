"""Regenerate the polynomial coefficients of the float32 error function (`ir/kernels/erf.py`).

    python tests/ir/kernels/make_erf32_coefficients.py

Least-squares Chebyshev fits (numpy) on dense nodes against CPython's `math.erf`/`math.erfc`,
converted to monomial coefficients and printed as the module's constants:

- NEAR: erf(x)/x as a polynomial of degree 8 in u = x^2, for |x| < 1.25;
- FAR: a * erfc(a) * exp(a^2) as a polynomial of degree 10 in t = 1/a, for 1.25 <= a <= 4.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import Polynomial
from numpy.polynomial import chebyshev as cheb

SPLIT, LIMIT = 1.25, 4.0


def monomial_fit(fn, xs: np.ndarray, var: np.ndarray, degree: int) -> list[float]:
    """Coefficients (lowest first) of a polynomial in `var` fitting fn over `xs`."""
    lo, hi = float(var.min()), float(var.max())
    values = np.array([fn(float(v)) for v in xs])
    c = cheb.chebfit((2 * var - (lo + hi)) / (hi - lo), values, degree)
    in_w = Polynomial(cheb.cheb2poly(c))
    return list(in_w(Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])).coef)


def main() -> None:
    x = np.linspace(0, SPLIT, 8001)
    near = monomial_fit(lambda v: math.erf(v) / v if v else 2 / math.sqrt(math.pi),
                        x, x * x, 8)
    a = np.linspace(SPLIT, LIMIT, 8001)
    far = monomial_fit(lambda v: v * math.erfc(v) * math.exp(v * v), a, 1 / a, 10)
    print("NEAR = (" + ", ".join(repr(float(c)) for c in near) + ")")
    print("FAR = (" + ", ".join(repr(float(c)) for c in far) + ")")


if __name__ == "__main__":
    main()
