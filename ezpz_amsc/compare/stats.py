"""The arithmetic of ``compare``: distributions, the noise estimators, Holm.

Pure Python (``math`` only): no scipy, no numpy. What each function is used for, and
why, is in docs/compare.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# d2(n): the expected range of n standard normal values. Range / d2 estimates the
# standard deviation from n = 2..5 repeats, where a sample SD says no more and one
# outlier pulls it as hard.
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326}
# The degrees of freedom one range of n values carries (Patnaik's approximation,
# the chi-square that fits the range's distribution): a range of 3 is worth about
# as much as an SD of 3, not more.
RANGE_DF = {2: 1.0, 3: 1.98, 4: 2.93, 5: 3.83}
MAX_RANGE_N = max(D2)

# Variance of the median of n standard normal values (n = 1..20), measured by
# simulation (10 million medians each; the last digit is within 0.0003). The median
# of 3 is noisier than their mean (0.449 against 0.333): a standard error from
# sigma * sqrt(1/n) would be too small for a median.
MEDIAN_VARIANCE = (1.0, 0.5, 0.4488, 0.2984, 0.2867, 0.2146, 0.2102, 0.1683, 0.166, 0.1384,
                   0.1373, 0.1176, 0.1167, 0.1022, 0.1017, 0.0904, 0.09, 0.081, 0.0808, 0.0735)


def median_variance(n: int) -> float:
    """Var(median of ``n`` values) / sigma^2; above 20 the large-sample pi / 2n, which is
    larger than the true value (a slightly wider interval, never a narrower one)."""
    if n < 1:
        raise ValueError(f"median of {n} values")
    return MEDIAN_VARIANCE[n - 1] if n <= len(MEDIAN_VARIANCE) else math.pi / (2 * n)


def c4(n: int) -> float:
    """E[sample SD] / sigma for n normal values: dividing by it makes the SD unbiased."""
    return math.sqrt(2 / (n - 1)) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))


def sigma_of_group(values: Sequence[float]) -> tuple[float, float]:
    """(sigma estimate, its degrees of freedom) from one point's repeats (ln scale).

    2..5 repeats: range / d2(n), with Patnaik's degrees of freedom; 6 or more: the
    sample SD / c4(n), n - 1 degrees of freedom. Both are unbiased for sigma.
    """
    n = len(values)
    if n < 2:
        raise ValueError("a spread needs two repeats")
    if n <= MAX_RANGE_N:
        return (max(values) - min(values)) / D2[n], RANGE_DF[n]
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return sd / c4(n), n - 1.0


def pooled_sigma(groups: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(sigma, degrees of freedom) pooled over groups of repeats: the groups' estimates
    averaged with their degrees of freedom as weights; the degrees of freedom add up."""
    estimates = [sigma_of_group(g) for g in groups]
    df = math.fsum(d for _, d in estimates)
    if df == 0:
        raise ValueError("no group with repeats")
    return math.fsum(s * d for s, d in estimates) / df, df


# --- distributions -----------------------------------------------------------------------

def normal_sf(x: float) -> float:
    """P(Z > x) for a standard normal Z (erfc keeps the far tail accurate)."""
    return 0.5 * math.erfc(x / math.sqrt(2))


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with ``df`` degrees of freedom (any df > 0; inf: normal)."""
    if math.isinf(df):
        return normal_sf(x)
    tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + x * x))
    return tail if x >= 0 else 1 - tail


def two_sided_p(z: float, df: float = math.inf) -> float:
    """P(|T| >= |z|): the two-sided p-value of ``z`` (normal when ``df`` is inf)."""
    return min(1.0, 2 * t_sf(abs(z), df))


def upper_quantile(p: float, df: float = math.inf) -> float:
    """The x with P(T > x) = ``p`` (0 < p < 0.5): bisection on :func:`t_sf`, to 1e-12."""
    if not 0 < p < 0.5:
        raise ValueError(f"upper tail {p} is not in (0, 0.5)")
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > p:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        if t_sf(mid, df) > p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# --- many tests at once ------------------------------------------------------------------

def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (from 0) is multiplied by m - i, and each
    adjusted value is at least the one before it (so the order of evidence is kept);
    a point is significant at family level alpha when its adjusted p <= alpha. Holm
    controls the chance of any false call among all m points at alpha, whatever the
    dependence between them, and rejects everything Bonferroni does and often more.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
