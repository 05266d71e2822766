"""compare/stats.py: the distributions against published tables, the noise estimators
against simulation, Holm against its definition."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from ezpz_amsc.compare.stats import (
    D2,
    RANGE_DF,
    c4,
    holm,
    incomplete_beta,
    median_variance,
    normal_cdf,
    normal_sf,
    pooled_sigma,
    sigma_of_group,
    t_sf,
    two_sided_p,
    upper_quantile,
)


# Student's t quantiles (any statistics table), df and upper tail
@pytest.mark.parametrize("df, tail, expected", [
    (1, 0.025, 12.7062047), (2, 0.025, 4.3026527), (5, 0.025, 2.5705818),
    (10, 0.025, 2.2281389), (30, 0.005, 2.7499957), (100, 0.025, 1.9839715),
    (math.inf, 0.025, 1.9599640), (math.inf, 0.0005, 3.2905267),
    (math.inf, 0.05 / 2 / 40, 3.2272184),
])
def test_quantiles_are_the_tables(df, tail, expected):
    assert upper_quantile(tail, df) == pytest.approx(expected, abs=2e-7)
    assert t_sf(expected, df) == pytest.approx(tail, rel=1e-6)


def test_t_approaches_the_normal_and_is_symmetric():
    assert t_sf(2.0, 1e7) == pytest.approx(normal_sf(2.0), rel=1e-5)
    assert t_sf(-1.3, 7) == pytest.approx(1 - t_sf(1.3, 7))
    assert t_sf(0.0, 3) == 0.5
    # non-integer degrees of freedom (a pooled range's) lie between their neighbours
    assert t_sf(2.0, 4) > t_sf(2.0, 4.5) > t_sf(2.0, 5)


def test_normal():
    for x in (-3.1, -0.4, 0.0, 1.2, 5.0):
        assert normal_cdf(x) == pytest.approx(NormalDist().cdf(x), rel=1e-12)
    for tail in (0.3, 0.025, 1e-4, 1e-9):
        assert upper_quantile(tail) == pytest.approx(NormalDist().inv_cdf(1 - tail), rel=1e-6)
    assert normal_cdf(0) == 0.5
    assert normal_cdf(1.959963985) == pytest.approx(0.975, abs=1e-9)
    assert normal_sf(8) == pytest.approx(6.22096e-16, rel=1e-4)  # the far tail, not 0


def test_two_sided_p():
    assert two_sided_p(1.959963985) == pytest.approx(0.05, abs=1e-9)
    assert two_sided_p(-2.2281389, 10) == pytest.approx(0.05, abs=1e-7)
    assert two_sided_p(0.0) == 1.0


def test_incomplete_beta_edges_and_a_closed_form():
    assert incomplete_beta(2, 3, 0) == 0 and incomplete_beta(2, 3, 1) == 1
    # I_x(1, b) = 1 - (1 - x)^b
    for x in (0.1, 0.5, 0.9):
        assert incomplete_beta(1, 4, x) == pytest.approx(1 - (1 - x) ** 4, rel=1e-12)


def test_upper_quantile_refuses_a_tail_outside_0_to_half():
    for p in (0, 0.5, 1.2):
        with pytest.raises(ValueError):
            upper_quantile(p)


def test_holm_is_the_step_down_procedure():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    # monotone: a larger p never gets a smaller adjusted p
    ps = [0.001, 0.0011, 0.2, 0.019]
    adj = holm(ps)
    order = sorted(range(4), key=ps.__getitem__)
    assert [adj[i] for i in order] == sorted(adj)


def test_the_range_constants_are_the_expected_range_of_normals():
    rng = np.random.default_rng(0)
    for n, d2 in D2.items():
        x = rng.standard_normal((400_000, n))
        assert np.ptp(x, axis=1).mean() == pytest.approx(d2, abs=3e-3)
    assert RANGE_DF[2] == 1.0  # the range of two is |x1 - x2|: exactly one df


@pytest.mark.parametrize("n", [2, 3, 5, 6, 9])
def test_a_groups_sigma_is_unbiased(n):
    rng = np.random.default_rng(n)
    est = [sigma_of_group(list(row))[0] for row in rng.normal(0, 0.03, (40_000, n))]
    assert np.mean(est) == pytest.approx(0.03, rel=0.01)
    assert sigma_of_group([0.0] * n)[1] == (RANGE_DF[n] if n <= 5 else n - 1)


def test_c4():
    assert c4(2) == pytest.approx(0.7978846, abs=1e-7)
    assert c4(10) == pytest.approx(0.9726593, abs=1e-7)


def test_pooled_sigma_weights_by_degrees_of_freedom():
    a, b = [0.0, 0.02], [0.0, 0.01, 0.03]
    sigma, df = pooled_sigma([a, b])
    sa, sb = 0.02 / D2[2], 0.03 / D2[3]
    assert df == pytest.approx(1 + 1.98)
    assert sigma == pytest.approx((sa * 1 + sb * 1.98) / df)
    with pytest.raises(ValueError):
        pooled_sigma([])
    with pytest.raises(ValueError):
        sigma_of_group([1.0])


@pytest.mark.slow
def test_the_medians_variance_table_is_the_simulations():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4, 5, 8, 13, 20):
        medians = np.median(rng.standard_normal((1_000_000, n)), axis=1)
        assert medians.var() == pytest.approx(median_variance(n), rel=6e-3), n
    # past the table, pi / 2n is above the truth: an interval a little too wide
    medians = np.median(rng.standard_normal((400_000, 30)), axis=1)
    assert medians.var() < median_variance(30) < 1.1 * medians.var()


def test_median_variance_needs_a_repeat():
    with pytest.raises(ValueError):
        median_variance(0)
    assert median_variance(3) == 0.4488 and median_variance(40) == pytest.approx(math.pi / 80)
