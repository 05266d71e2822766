"""compare/study.py: matching, the noise, the verdicts, the study shift, the exit status.

Studies are made up with a seeded RNG (synthetic_studies.py) and written as results
files, then read by the report's reader as the command reads them. Each test asserts
the numbers a verdict rests on, not only the label.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from synthetic_studies import CFG, Study, realistic_pair

from ezpz_amsc.compare.stats import median_variance, pooled_sigma, upper_quantile
from ezpz_amsc.compare.study import (
    ASSUMED_SIGMA_PCT,
    SIGMA_FLOOR_PCT,
    CompareInputError,
    Settings,
    compare_studies,
    read_study,
)


def run(tmp_path: Path, base: Study, new: Study, noise: Study | None = None,
        **settings) -> dict:
    paths = [base.write(tmp_path / "base.csv"), new.write(tmp_path / "new.csv")]
    aa = read_study([noise.write(tmp_path / "aa.csv")]) if noise is not None else None
    return compare_studies(read_study([paths[0]]), read_study([paths[1]]),
                           Settings(**settings), noise=aa)


def point(c: dict, nodes: int, system: str = "aurora", config: str = CFG) -> dict:
    (p,) = [p for p in c["points"]
            if (p["system"], p["config"], p["nodes"]) == (system, config, nodes)]
    return p


def scatter(rng: np.random.Generator, rate: float, n: int, sigma: float) -> list[float]:
    return [rate * math.exp(rng.normal(0, sigma)) for _ in range(n)]


def study_of_points(seed: int, points: int, repeats: int, sigma: float,
                    factor: dict[int, float] | float = 1.0) -> tuple[Study, Study]:
    """``points`` node counts of one config on aurora, ``repeats`` runs each per study,
    scatter ``sigma``; the new study's rates times ``factor`` (per node count, or all)."""
    rng = np.random.default_rng(seed)
    base, new = Study(), Study("2026-09-02T00:00:00Z")
    for i in range(points):
        nodes = i + 1
        f = factor.get(nodes, 1.0) if isinstance(factor, dict) else factor
        true = 10_000 * (1 - 0.01 * i)
        base.repeats("aurora", nodes, scatter(rng, true, repeats, sigma))
        new.repeats("aurora", nodes, scatter(rng, true * f, repeats, sigma))
    return base, new


# --- the cases ------------------------------------------------------------------

def test_a_point_15_percent_slower_with_3_repeats_at_2_percent_is_slower(tmp_path):
    base, new = study_of_points(1, points=20, repeats=3, sigma=0.02, factor={7: 0.85})
    c = run(tmp_path, base, new)
    p = point(c, 7)
    assert p["verdict"] == "slower" and c["exit_code"] == 1
    (noise,) = c["noise"]
    assert noise["source"] == "studies" and 1.5 < noise["sigma_pct"] < 2.6
    # d, se and z are what the rule says: ln of the medians' ratio, sigma times the
    # root of the two medians' variances, and their quotient
    b, n = p["base"]["tokens_per_sec_per_gpu"], p["new"]["tokens_per_sec_per_gpu"]
    assert p["d"] == pytest.approx(math.log(n / b), abs=1e-4)
    sigma = noise["sigma_pct"] / 100
    assert p["se"] == pytest.approx(sigma * math.sqrt(2 * median_variance(3)), abs=1e-5)
    assert p["z"] == pytest.approx(p["d"] / p["se"], abs=1e-2)
    assert -18 < p["change_pct"] < -12 and p["p_adjusted"] <= 0.05
    assert p["interval_pct"][1] < -5
    # nothing else is called: the other 19 points are the same runs again
    assert Counter(q["verdict"] for q in c["points"])["slower"] == 1
    assert c["counts"]["faster"] == 0 and c["judged"] == 20


def test_a_single_point_15_percent_slower_with_3_repeats_is_slower_on_assumed_noise(tmp_path):
    # one point alone: 2 groups of repeats (4 degrees of freedom) cannot measure sigma, so
    # 5% is assumed and said; 15% over a standard error of 4.7% still stands out
    base, new = study_of_points(2, points=1, repeats=3, sigma=0.02, factor=0.85)
    c = run(tmp_path, base, new)
    p = point(c, 1)
    assert (p["verdict"], p["assumed_noise"], c["exit_code"]) == ("slower", True, 1)
    assert c["noise"][0]["source"] == "assumed" and c["noise"][0]["sigma_pct"] == 5.0
    assert p["se"] == pytest.approx(0.05 * math.sqrt(2 * median_variance(3)), abs=1e-5)


def test_one_repeat_a_side_with_assumed_noise_is_unsure_with_the_repeats_that_settle_it(
        tmp_path):
    base = Study().add("aurora", 4, 10_000)
    new = Study("2026-09-02T00:00:00Z").add("aurora", 4, 8_500)
    c = run(tmp_path, base, new)
    p = point(c, 4)
    assert (p["verdict"], p["assumed_noise"], c["exit_code"]) == ("unsure", True, 0)
    assert p["change_pct"] == -15.0 and p["ratio"] == 0.85
    assert p["se"] == pytest.approx(0.05 * math.sqrt(2), abs=1e-5)
    # at 2 repeats a side, se = 5% and -16.3% on the log scale is 3.25 se: past 1.96
    assert p["settle_repeats"] == 2
    assert c["noise"][0] == {"system": "aurora",
                             "studies": {"sigma_pct": None, "df": 0.0, "repeated_points": 0},
                             "noise_files": None, "source": "assumed", "sigma_pct": 5.0,
                             "df": None, "floored": False}


def test_a_6_percent_shift_of_a_10_point_study_of_single_runs_is_a_slower_study(tmp_path):
    base, new = study_of_points(3, points=10, repeats=1, sigma=0.02, factor=0.94)
    c = run(tmp_path, base, new)
    assert c["counts"]["slower"] == 0 and c["counts"]["unsure"] == 10
    (shift,) = c["shifts"]
    assert shift["verdict"] == "slower" and shift["points"] == 10
    assert -8 < shift["change_pct"] <= -5 and shift["interval_pct"][1] < 0
    ds = [p["d"] for p in c["points"]]
    assert shift["ratio"] == pytest.approx(math.exp(sum(ds) / 10), abs=1e-4)
    assert c["exit_code"] == 1 and "slower by" in c["exit_reason"]


@pytest.mark.slow
def test_a_6_percent_shift_is_caught_in_most_seeds_and_never_as_a_slower_point(tmp_path):
    caught = 0
    for seed in range(100):
        base, new = study_of_points(seed, points=10, repeats=1, sigma=0.02, factor=0.94)
        c = run(tmp_path, base, new)
        assert c["counts"]["slower"] == 0
        caught += c["shifts"][0]["verdict"] == "slower"
    # the shift's estimate scatters by 0.9% around 6.2%, and must reach 5%: ~85%
    assert caught >= 75


def test_a_study_without_change_is_no_shift(tmp_path):
    base, new = study_of_points(4, points=12, repeats=2, sigma=0.02)
    c = run(tmp_path, base, new)
    (shift,) = c["shifts"]
    assert shift["verdict"] == "none" and shift["interval_pct"][0] < 0 < shift["interval_pct"][1]


def test_a_3_percent_shift_seen_clearly_is_a_drift_warning_and_does_not_fail(tmp_path):
    base, new = study_of_points(5, points=20, repeats=3, sigma=0.01, factor=0.97)
    c = run(tmp_path, base, new)
    (shift,) = c["shifts"]
    assert shift["verdict"] == "drift" and -4 < shift["change_pct"] < -2
    assert c["exit_code"] == 0


def test_fewer_than_6_judged_points_is_no_study_shift(tmp_path):
    base, new = study_of_points(6, points=5, repeats=1, sigma=0.02, factor=0.9)
    (shift,) = run(tmp_path, base, new)["shifts"]
    assert (shift["verdict"], shift["points"], shift["ratio"]) == ("not judged", 5, None)


# --- A/A calibration --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("bad_nodes", [0.0, 1 / 40], ids=["gaussian", "bad-nodes"])
def test_an_a_a_pair_calls_nothing_slower_or_faster_in_95_percent_of_seeds(tmp_path,
                                                                           bad_nodes):
    """Two sweeps of the same runs (2 systems x 2 configs x 7 node counts, 1-3 repeats a
    point, 2% and 3% scatter; with one run in 40 on a bad node, 6-20% slow): the family
    error rate holds."""
    seeds = 200
    clean = exit_0 = 0
    for seed in range(seeds):
        base, new = realistic_pair(seed, bad_nodes=bad_nodes)
        c = run(tmp_path, base, new)
        calls = c["counts"]["slower"] + c["counts"]["faster"]
        clean += calls == 0
        exit_0 += c["exit_code"] == 0
        assert c["judged"] >= 15 and {n["source"] for n in c["noise"]} == {"studies"}
    assert clean / seeds >= 0.95 and exit_0 / seeds >= 0.95, (clean, exit_0)


# --- the noise --------------------------------------------------------------------------

def test_sigma_is_the_pooled_range_estimate_over_both_studies(tmp_path):
    base, new = Study(), Study("2026-09-02T00:00:00Z")
    groups = []
    for nodes in range(1, 7):
        b = [10_000, 10_000 * math.exp(0.03 + 0.002 * nodes)]
        n = [9_900, 9_900 * math.exp(0.025), 9_900 * math.exp(0.01)]
        base.repeats("aurora", nodes, b)
        new.repeats("aurora", nodes, n)
        groups += [[math.log(x) for x in b], [math.log(x) for x in n]]
    c = run(tmp_path, base, new)
    sigma, df = pooled_sigma(groups)
    (noise,) = c["noise"]
    assert noise["studies"] == {"sigma_pct": round(100 * sigma, 2), "df": round(df, 2),
                                "repeated_points": 12}
    assert (noise["source"], noise["sigma_pct"]) == ("studies", round(100 * sigma, 2))
    # 6 ranges of 2 (1 df each) and 6 of 3 (1.98 each)
    assert noise["df"] == pytest.approx(6 + 6 * 1.98)


def test_sigma_below_the_floor_is_raised_to_it(tmp_path):
    base, new = study_of_points(7, points=12, repeats=2, sigma=0.002)
    (noise,) = run(tmp_path, base, new)["noise"]
    assert noise["studies"]["sigma_pct"] < 0.5
    assert (noise["sigma_pct"], noise["floored"]) == (SIGMA_FLOOR_PCT, True)


def test_too_few_repeats_assume_sigma_and_label_every_verdict(tmp_path):
    # 4 points repeated twice: 4 degrees of freedom, fewer than 10
    base, new = study_of_points(8, points=8, repeats=1, sigma=0.02)
    for nodes in (1, 2):
        base.add("aurora", nodes, 9_950)
        new.add("aurora", nodes, 9_950)
    c = run(tmp_path, base, new)
    (noise,) = c["noise"]
    assert noise["source"] == "assumed" and noise["sigma_pct"] == ASSUMED_SIGMA_PCT
    assert noise["studies"]["repeated_points"] == 4 and noise["studies"]["df"] == 4.0
    assert all(p["assumed_noise"] for p in c["points"])
    assert c["shifts"][0]["assumed_noise"]


def test_noise_from_an_a_a_pair_sets_sigma(tmp_path):
    base, new = study_of_points(9, points=12, repeats=2, sigma=0.01)
    rng = np.random.default_rng(9)
    aa = Study("2026-07-01T00:00:00Z")
    groups = []
    for nodes in range(1, 13):
        rates = scatter(rng, 10_000, 2, 0.04)
        aa.repeats("aurora", nodes, rates)
        groups.append([math.log(float(f"{r:.3f}")) for r in rates])
    c = run(tmp_path, base, new, noise=aa)
    (noise,) = c["noise"]
    assert noise["source"] == "a/a" and noise["sigma_pct"] == noise["noise_files"]["sigma_pct"]
    assert noise["noise_files"]["repeated_points"] == 12 and noise["noise_files"]["df"] == 12
    assert noise["sigma_pct"] == round(100 * pooled_sigma(groups)[0], 2)
    assert noise["studies"]["sigma_pct"] < noise["sigma_pct"]
    # with sigma from the A/A pair, the points' standard errors follow it
    p = point(c, 1)
    assert p["se"] == pytest.approx(noise["sigma_pct"] / 100, abs=1e-5)


def test_noise_from_a_quieter_a_a_pair_does_not_lower_the_studies_own(tmp_path):
    base, new = study_of_points(10, points=12, repeats=2, sigma=0.04)
    aa = Study("2026-07-01T00:00:00Z")
    for nodes in range(1, 13):
        aa.repeats("aurora", nodes, [10_000, 10_100])
    (noise,) = run(tmp_path, base, new, noise=aa)["noise"]
    assert noise["source"] == "studies"
    assert noise["sigma_pct"] == noise["studies"]["sigma_pct"] > noise["noise_files"]["sigma_pct"]


def test_noise_from_a_file_with_too_few_repeats_is_not_used(tmp_path):
    base, new = study_of_points(11, points=12, repeats=2, sigma=0.02)
    aa = Study("2026-07-01T00:00:00Z").repeats("aurora", 1, [10_000, 10_300])
    (noise,) = run(tmp_path, base, new, noise=aa)["noise"]
    assert noise["source"] == "studies" and noise["noise_files"]["df"] == 1.0


def test_a_spread_across_different_steps_is_not_counted_as_noise(tmp_path):
    base, new = study_of_points(12, points=12, repeats=2, sigma=0.01)
    base.add("aurora", 50, 10_000, steps=30).add("aurora", 50, 5_000, steps=100)
    c = run(tmp_path, base, new)
    assert c["noise"][0]["studies"]["repeated_points"] == 24


# --- the family ---------------------------------------------------------------------------

def test_holm_over_the_family_decides_and_the_p_values_are_adjusted(tmp_path):
    base, new = study_of_points(13, points=30, repeats=2, sigma=0.02, factor={5: 0.91})
    c = run(tmp_path, base, new)
    judged = [p for p in c["points"] if p["p"] is not None]
    ps = sorted(p["p"] for p in judged)
    smallest = min(judged, key=lambda p: p["p"])
    # the smallest p is multiplied by the family's size (30), and never below itself
    assert smallest["p_adjusted"] == pytest.approx(min(1, 30 * ps[0]), rel=2e-2)
    assert all(p["p_adjusted"] >= p["p"] for p in judged)
    # alone, 9% over se 2% is significant; Holm over 30 points asks for more
    assert point(c, 5)["p"] < 0.05


def test_a_change_under_min_effect_is_never_slower(tmp_path):
    # 20 repeats a side: even at the floor's 2%, the median's se is 0.77%
    base, new = study_of_points(14, points=12, repeats=20, sigma=0.002, factor={3: 0.97})
    c = run(tmp_path, base, new)
    p = point(c, 3)
    assert c["noise"][0]["floored"]
    assert p["p_adjusted"] < 0.01 and -3.5 < p["change_pct"] < -2.5
    assert p["verdict"] == "same"  # significant, but the interval lies inside +-5%
    assert c["exit_code"] == 0
    c = run(tmp_path, base, new, min_effect_pct=2.0)
    assert point(c, 3)["verdict"] == "slower"


def test_resolves_is_bonferronis_cut_on_the_points_standard_error(tmp_path):
    base, new = study_of_points(15, points=12, repeats=2, sigma=0.02)
    c = run(tmp_path, base, new)
    p = point(c, 1)
    df = c["noise"][0]["df"]
    q = upper_quantile(0.05 / (2 * c["judged"]), df)
    assert p["resolves_pct"] == round((1 - math.exp(-q * p["se"])) * 100, 1)


def test_one_repeat_on_a_side_is_never_called_even_with_a_pooled_sigma(tmp_path):
    base, new = study_of_points(16, points=12, repeats=3, sigma=0.02)
    base.add("aurora", 40, 10_000)
    new.add("aurora", 40, 7_000)
    c = run(tmp_path, base, new)
    p = point(c, 40)
    assert c["noise"][0]["source"] == "studies"
    assert p["verdict"] == "unsure" and p["change_pct"] == -30.0
    assert p["p_adjusted"] < 0.001 and p["settle_repeats"] == 2


def test_a_point_whose_repeats_spread_over_10_percent_is_noisy_and_not_judged(tmp_path):
    base, new = study_of_points(17, points=12, repeats=2, sigma=0.01)
    base.repeats("aurora", 40, [10_000, 10_200])
    new.repeats("aurora", 40, [7_000, 8_000])
    c = run(tmp_path, base, new)
    p = point(c, 40)
    assert p["verdict"] == "noisy" and p["new"]["spread_pct"] == 13.3
    assert p["z"] is None and c["judged"] == 12


# --- counted without statistics ---------------------------------------------------------

def test_broke_gone_new_fixed_flaky_failing_and_different_steps(tmp_path):
    base, new = study_of_points(18, points=12, repeats=2, sigma=0.01)
    base.repeats("aurora", 100, [9_000, 9_050])
    new.add("aurora", 100, None, status="fail", error="NCCL timeout")
    new.add("aurora", 100, None, status="fail", error="NCCL timeout")
    base.add("aurora", 101, 9_000)
    new.add("aurora", 102, 9_000)
    base.add("aurora", 103, None, status="fail", error="OOM")
    new.repeats("aurora", 103, [8_000, 8_020])
    base.repeats("aurora", 104, [9_000, 9_050, 9_020])
    new.repeats("aurora", 104, [9_010, 9_030]).add("aurora", 104, None, status="fail")
    base.add("aurora", 105, None, status="fail")
    new.add("aurora", 105, None, status="fail")
    base.repeats("aurora", 106, [9_000, 9_010])
    new.add("aurora", 106, None)  # a pass row without throughput
    base.repeats("aurora", 107, [9_000, 9_010], steps=30)
    new.repeats("aurora", 107, [9_000, 9_010], steps=100)
    c = run(tmp_path, base, new)
    verdicts = {p["nodes"]: p["verdict"] for p in c["points"] if p["nodes"] >= 100}
    assert verdicts == {100: "broke", 101: "gone", 102: "new", 103: "fixed", 104: "same",
                        105: "failing", 106: "unmeasured", 107: "not comparable"}
    broke = point(c, 100)
    assert broke["new"]["failed"] == 2 and broke["new"]["errors"] == ["NCCL timeout"]
    assert broke["base"]["repeats"] == 2 and broke["ratio"] is None
    assert point(c, 104)["flaky"] and not point(c, 103)["flaky"]
    assert point(c, 107)["base"]["steps"] == [30] and point(c, 107)["new"]["steps"] == [100]
    assert point(c, 106)["new"]["without_throughput"] == 1
    counts = c["counts"]
    assert (counts["broke"], counts["gone"], counts["new"], counts["fixed"], counts["flaky"],
            counts["failing"], counts["unmeasured"], counts["not comparable"]) == (
        1, 1, 1, 1, 1, 1, 1, 1)
    # none of these is judged: only the 12 plain points and the flaky one are
    assert c["judged"] == 13
    assert (c["exit_code"], c["exit_reason"]) == (1, "1 broke point")


def test_gone_fails_only_with_require_all(tmp_path):
    base, new = study_of_points(19, points=8, repeats=2, sigma=0.01)
    base.add("aurora", 64, 9_000)
    c = run(tmp_path, base, new)
    assert (c["counts"]["gone"], c["exit_code"]) == (1, 0)
    c = run(tmp_path, base, new, require_all=True)
    assert (c["exit_code"], c["exit_reason"]) == (3, "1 point gone from new (--require-all)")


def test_different_systems_are_never_compared(tmp_path):
    base = Study().repeats("aurora", 1, [10_000, 10_100]).repeats("aurora", 2, [9_800])
    new = Study("2026-09-02T00:00:00Z").repeats("polaris", 1, [20_000, 20_300])
    new.repeats("polaris", 2, [19_000])
    c = run(tmp_path, base, new)
    assert [p["verdict"] for p in c["points"]] == ["gone", "gone", "new", "new"]
    assert c["judged"] == 0 and c["noise"] == [] and c["shifts"] == []
    assert c["exit_code"] == 3
    assert c["exit_reason"] == (
        "nothing comparable: base is on aurora, new on polaris; different systems are not "
        "compared (--across-systems shows them side by side, as a difference)")


def test_across_systems_shows_a_difference_never_a_regression(tmp_path):
    base = Study().repeats("aurora", 1, [10_000, 10_100]).repeats("aurora", 2, [9_800])
    new = Study("2026-09-02T00:00:00Z").repeats("polaris", 1, [5_000, 5_050])
    new.repeats("polaris", 4, [4_000])
    c = run(tmp_path, base, new, across_systems=True)
    assert [(p["verdict"], p["system"], p["nodes"]) for p in c["points"]] == [
        ("different", "aurora", 1), ("gone", "aurora", 2), ("new", "polaris", 4)]
    diff = c["points"][0]
    assert (diff["new"]["system"], diff["new"]["gpus"], diff["gpus"]) == ("polaris", 4, 12)
    assert diff["ratio"] == round(5_025 / 10_050, 4) and diff["change_pct"] == -50.0
    assert diff["z"] is None and c["judged"] == 0
    assert (c["counts"]["different"], c["exit_code"]) == (1, 0)


def test_a_system_in_both_studies_is_compared_and_one_in_base_only_is_gone(tmp_path):
    base, new = study_of_points(20, points=8, repeats=2, sigma=0.01)
    base.repeats("polaris", 1, [20_000])
    c = run(tmp_path, base, new)
    assert point(c, 1, "polaris")["verdict"] == "gone"
    assert [n["system"] for n in c["noise"]] == ["aurora"]


def test_system_names_match_across_case(tmp_path):
    base, new = study_of_points(21, points=8, repeats=2, sigma=0.01)
    new.rows = [[r[0], "Aurora", *r[2:]] for r in new.rows]
    c = run(tmp_path, base, new)
    assert c["judged"] == 8 and c["counts"]["gone"] == c["counts"]["new"] == 0


def test_nothing_in_both_studies_is_exit_3(tmp_path):
    base = Study().add("aurora", 1, 10_000, config="a")
    new = Study("2026-09-02T00:00:00Z").add("aurora", 1, 10_000, config="b")
    c = run(tmp_path, base, new)
    assert (c["exit_code"], c["exit_reason"]) == (3, "nothing comparable: no point is in both "
                                                     "studies")
    base = Study().repeats("aurora", 1, [10_000, 12_000])
    new = Study("2026-09-02T00:00:00Z").repeats("aurora", 1, [10_000, 10_100])
    c = run(tmp_path, base, new)
    assert (c["exit_code"], c["exit_reason"]) == (
        3, "nothing comparable: of the points in both studies none could be judged (1 noisy)")


def test_an_improvement_never_fails(tmp_path):
    base, new = study_of_points(22, points=12, repeats=3, sigma=0.01, factor=1.3)
    c = run(tmp_path, base, new)
    assert c["counts"]["faster"] == 12 and c["shifts"][0]["verdict"] == "faster"
    assert c["exit_code"] == 0


def test_dates_rows_and_settings_are_reported(tmp_path):
    base, new = study_of_points(23, points=3, repeats=1, sigma=0.01)
    new.add("aurora", 9, None, status="fail")
    c = run(tmp_path, base, new)
    assert c["base"]["dates"] == {"first": "2026-08-11T00:00:00Z", "last": "2026-08-11T00:00:02Z"}
    assert c["new"]["dates"] == {"first": "2026-09-02T00:00:00Z", "last": "2026-09-02T00:00:03Z"}
    assert c["new"]["rows"] == {"read": 4, "measured": 3, "without_throughput": 0, "failed": 1,
                                "not_used": 0}
    assert c["settings"]["alpha"] == 0.05 and c["settings"]["min_effect_pct"] == 5.0


def test_a_file_that_cannot_be_read_is_an_input_error(tmp_path):
    with pytest.raises(CompareInputError, match="no such file") as e:
        read_study([tmp_path / "nope.csv"])
    assert e.value.exit_code == 2


def test_settings_refuse_what_makes_no_sense():
    with pytest.raises(ValueError):
        Settings(alpha=0.7)
    with pytest.raises(ValueError):
        Settings(min_effect_pct=0)
