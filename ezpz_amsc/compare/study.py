"""``compare BASE NEW``: two studies matched point by point, each point given a verdict.

The comparison is one plain dict (:func:`compare_studies`); the text, the Markdown and
the JSON (:mod:`ezpz_amsc.compare.render`) are all drawn from it, so they cannot
disagree. The rules, and why each threshold, are in docs/compare.md.

A point is (system, config, nodes, gpus), the system's case folded as ``report``
folds it; its repeats are its measured rows (``pass`` with both throughputs), read
by :func:`ezpz_amsc.report.data.read_sweep` exactly as ``report`` reads them. What
is compared is the median tokens/s/gpu, on the log scale: d = ln(new / base).
"""

from __future__ import annotations

import math
import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ezpz_amsc.compare.stats import (
    holm,
    median_variance,
    pooled_sigma,
    two_sided_p,
    upper_quantile,
)
from ezpz_amsc.errors import AmscError, ExitStatus, os_error_text
from ezpz_amsc.report.data import SPREAD_ABOVE_PCT, Sweep, read_sweep, spread_pct
from ezpz_amsc.text import opt, plural, spelled

# sigma is never taken below this: two runs of one job on a shared machine differ by
# a percent or two (placement, network neighbours, clocks) even when a handful of
# back-to-back repeats agree closely, and a sigma of 0.3 % would call that slower.
SIGMA_FLOOR_PCT = 2.0
# sigma when the studies hold too few repeats to measure it: a typical scatter of one
# point's repeats on the machines the dashboard compares.
ASSUMED_SIGMA_PCT = 5.0
# Below this many degrees of freedom of repeats, a measured sigma is too uncertain to
# judge with (its own relative error is about 1 / sqrt(2 df): 22 % at 10): the assumed
# sigma is used instead, and every verdict of the system says so.
MIN_SIGMA_DF = 10.0
# A point whose own repeats spread more than this (the report's "repeats disagree")
# does not measure one rate: it is `noisy`, and not judged.
NOISY_ABOVE_PCT = SPREAD_ABOVE_PCT
# The study shift is judged on this many judged points or more.
SHIFT_MIN_POINTS = 6
# A study shift this large or larger (and its interval excluding no change) is a drift
# warning; at --min-effect it is a slower (or faster) study.
DRIFT_PCT = 2.0
# A point is called slower or faster only with this many repeats on each side or more:
# of two runs, one on a bad node shows as a spread above NOISY_ABOVE_PCT (the point is
# then `noisy`), and a change below it moves their median by less than --min-effect;
# one run cannot be checked at all.
MIN_CALL_REPEATS = 2
# The repeats per side an `unsure` point is looked up to: past this, "more than".
MAX_SETTLE = 50

ALPHA = 0.05
MIN_EFFECT_PCT = 5.0

# Every verdict a point can get, in the order they are counted and listed.
VERDICTS = ("slower", "broke", "faster", "fixed", "same", "unsure", "noisy", "unmeasured",
            "not comparable", "failing", "different", "new", "gone")
FAILING_VERDICTS = ("slower", "broke")  # exit 1

PointKey = tuple[str, str, int, int]  # system (case folded), config, nodes, gpus


class CompareInputError(AmscError):
    """A file ``compare`` cannot read: an input error, exit 2 (a gate that compared less
    than it was given must not look like a finding)."""

    exit_code = ExitStatus.USAGE


def read_study(paths: Sequence[str | os.PathLike[str]]) -> Sweep:
    """One study's results files, read as ``report`` reads them; one it cannot read is an
    input error."""
    try:
        for path in paths:
            if Path(path).is_dir():  # before read_sweep, whose message names the report
                raise CompareInputError(f"{path}: is a directory; compare needs results CSV "
                                        "files")
        return read_sweep(paths)
    except CompareInputError:
        raise
    except AmscError as e:
        raise CompareInputError(e.format_message()) from None
    except OSError as e:  # e.g. below a folder you may not search: exit 1 would be a finding
        raise CompareInputError(os_error_text(e)) from None


@dataclass(frozen=True)
class Settings:
    """What ``compare`` is asked: the family alpha, the smallest change that counts, and
    the switches."""

    alpha: float = ALPHA
    min_effect_pct: float = MIN_EFFECT_PCT
    across_systems: bool = False
    require_all: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha {self.alpha} is not between 0 and 0.5")
        if not 0 < self.min_effect_pct < 100:
            raise ValueError(f"min effect {self.min_effect_pct}% is not between 0 and 100")


# --- one study's points --------------------------------------------------------------------

@dataclass
class Side:
    """One point in one study: its measured repeats (as ln of tokens/s/gpu) and its other rows."""

    system: str  # as shown (the sweep's most common spelling)
    logs: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    mfu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    steps: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    unmeasured: int = 0  # pass rows without throughput
    first: str = ""
    last: str = ""

    @property
    def n(self) -> int:
        return len(self.rates)

    @property
    def passed(self) -> int:
        return self.n + self.unmeasured

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def spread(self) -> float | None:
        s = spread_pct(self.rates)
        return None if s is None else round(s, 1)

    @property
    def known_steps(self) -> set[float]:
        """The steps the repeats logged, empty cells left out (unknown is not different)."""
        return {float(s) for s in self.steps if s}

    def seen(self, stamp: str) -> None:
        if not self.first or stamp < self.first:
            self.first = stamp
        if stamp > self.last:
            self.last = stamp

    def data(self, gpus: int) -> dict[str, Any]:
        n = self.n
        return {
            "system": self.system, "gpus": gpus,
            "repeats": n,
            "tokens_per_sec_per_gpu": round(self.median, 3) if n else None,
            "tokens_per_sec_per_gpu_min": min(self.rates) if n else None,
            "tokens_per_sec_per_gpu_max": max(self.rates) if n else None,
            "spread_pct": self.spread,
            "mfu_pct": round(statistics.median(self.mfu), 1) if self.mfu else None,
            "wall_time_sec": round(statistics.median(self.wall), 3) if self.wall else None,
            "steps": [int(x) if x.is_integer() else x for x in sorted(self.known_steps)],
            "failed": self.failed, "errors": self.errors,
            "without_throughput": self.unmeasured,
            "first": self.first or None, "last": self.last or None,
        }


def sides_of(sweep: Sweep) -> dict[PointKey, Side]:
    """Every point of a sweep, measured or not, keyed by (folded system, config, nodes, gpus)."""
    sides: dict[PointKey, Side] = {}

    def side(config: str, system: str, nodes: int, gpus: int) -> Side:
        folded = system.casefold()
        key = (folded, config, nodes, gpus)
        if key not in sides:
            sides[key] = Side(sweep.system_name(folded))
        return sides[key]

    for (config, folded, nodes, gpus), point in sweep.measured.items():
        s = side(config, folded, nodes, gpus)
        s.rates = list(point.tps_per_gpu)
        s.logs = [math.log(r) for r in s.rates]
        s.mfu, s.wall, s.steps = list(point.mfu_pct), list(point.wall), dict(point.steps)
        s.seen(point.first)
        s.seen(point.last)
    for row in sweep.failed:
        s = side(row["config"], row["system"], row["nodes"], row["gpus"])
        s.failed += 1
        if row["error"] and row["error"] not in s.errors:
            s.errors.append(row["error"])
        s.seen(row["timestamp"])
    for row in sweep.without_throughput:
        side(row["config"], row["system"], row["nodes"], row["gpus"]).unmeasured += 1
    return sides


def _dates(sides: Iterable[Side]) -> dict[str, str | None]:
    stamps = [t for s in sides for t in (s.first, s.last) if t]
    return {"first": min(stamps) if stamps else None, "last": max(stamps) if stamps else None}


# --- the noise ----------------------------------------------------------------------------

def _groups(sides: Mapping[PointKey, Side]) -> dict[str, list[list[float]]]:
    """Per folded system, the ln rates of every point with 2 or more repeats whose repeats
    all logged the same steps (a spread across different step counts is not noise)."""
    out: dict[str, list[list[float]]] = defaultdict(list)
    for key, s in sides.items():
        if s.n >= 2 and len(s.known_steps) <= 1:
            out[key[0]].append(s.logs)
    return out


def _estimate(groups: list[list[float]]) -> tuple[float, float, int] | None:
    if not groups:
        return None
    sigma, df = pooled_sigma(groups)
    return sigma, df, len(groups)


def noise_of(systems: Iterable[str], names: Mapping[str, str],
             own: Mapping[str, list[list[float]]],
             aa: Mapping[str, list[list[float]]] | None) -> dict[str, dict[str, Any]]:
    """Per folded system: the sigma judged with, where it came from, and what it rests on.

    The studies' own repeats, pooled (:func:`~ezpz_amsc.compare.stats.pooled_sigma`), or
    with ``aa`` (``--noise-from``) the A/A files' repeats, unless the studies' own show
    more noise; either needs MIN_SIGMA_DF degrees of freedom, else sigma is assumed.
    A measured sigma is never below SIGMA_FLOOR_PCT.
    """
    out = {}
    for system in sorted(systems):
        mine = _estimate(own.get(system, []))
        theirs = _estimate(aa.get(system, [])) if aa is not None else None
        usable = [(est, src) for est, src in ((theirs, "a/a"), (mine, "studies"))
                  if est is not None and est[1] >= MIN_SIGMA_DF]
        entry: dict[str, Any] = {"system": names[system],
                                 "studies": _estimate_data(mine),
                                 "noise_files": _estimate_data(theirs) if aa is not None else None}
        if not usable:
            entry.update(source="assumed", sigma_pct=ASSUMED_SIGMA_PCT, df=None, floored=False)
        else:
            # the A/A when it is usable, unless the studies' own repeats show more noise
            (est, src) = usable[0]
            if len(usable) == 2 and usable[1][0][0] > est[0]:
                est, src = usable[1]
            pct = 100 * est[0]
            entry.update(source=src, sigma_pct=round(max(pct, SIGMA_FLOOR_PCT), 2),
                         df=round(est[1], 2), floored=pct < SIGMA_FLOOR_PCT)
        out[system] = entry
    return out


def _estimate_data(est: tuple[float, float, int] | None) -> dict[str, Any]:
    if est is None:
        return {"sigma_pct": None, "df": 0.0, "repeated_points": 0}
    sigma, df, count = est
    return {"sigma_pct": round(100 * sigma, 2), "df": round(df, 2), "repeated_points": count}


# --- the points ---------------------------------------------------------------------------

def _share_failed(s: Side) -> float:
    return s.failed / (s.failed + s.passed)


def _first_verdict(b: Side | None, n: Side | None) -> str | None:
    """The verdict that needs no statistics, or None: the point is judged."""
    if n is None:
        return "gone"
    if b is None:
        return "new"
    if b.passed and not n.passed:
        return "broke"
    if not b.passed:
        return "fixed" if n.passed else "failing"
    if not b.n or not n.n:
        return "unmeasured"
    if len(b.known_steps | n.known_steps) > 1:
        return "not comparable"
    if any(s.spread is not None and s.spread > NOISY_ABOVE_PCT for s in (b, n)):
        return "noisy"
    return None


def _pct(x: float) -> float:
    """ln ratio -> percent change, rounded as shown."""
    return round((math.exp(x) - 1) * 100, 1)


def _sig(x: float) -> float:
    return float(f"{x:.3g}")


@dataclass
class _Judged:
    key: PointKey
    record: dict[str, Any]
    d: float
    se: float
    df: float
    assumed: bool
    nb: int
    nn: int


def _settle(j: _Judged, sigma: float, q: float, q_family: float, min_effect: float
            ) -> int | None:
    """Repeats per side (each side at least that many) after which this point, at the
    change seen now, would be `same` or called slower/faster; None past MAX_SETTLE."""
    change = abs(_pct(j.d))
    bound = math.log1p(min_effect / 100)
    for n in range(1, MAX_SETTLE + 1):
        se = sigma * math.sqrt(median_variance(max(n, j.nb)) + median_variance(max(n, j.nn)))
        if change >= min_effect:
            if n >= MIN_CALL_REPEATS and abs(j.d) >= q_family * se:
                return n
        elif (abs(j.d) + q * se < bound and -bound < j.d - q * se
              and not (j.assumed and max(n, j.nb) == max(n, j.nn) == 1)):
            return n
    return None


def compare_studies(base: Sweep, new: Sweep, settings: Settings = Settings(),
                    noise: Sweep | None = None) -> dict[str, Any]:
    """The whole comparison as plain data (what ``--format json`` prints)."""
    sb, sn = sides_of(base), sides_of(new)
    names = {k[0]: s.system for k, s in sn.items()}
    names.update({k[0]: s.system for k, s in sb.items()})
    own = _groups(sb)
    for system, gs in _groups(sn).items():
        own[system] = own.get(system, []) + gs
    aa = None
    if noise is not None:
        aa = _groups(sides_of(noise))
    both = {k[0] for k in sb} & {k[0] for k in sn}
    noise_by = noise_of(both, names, own, aa)

    records: dict[PointKey, dict[str, Any]] = {}
    judged: list[_Judged] = []
    for key in sorted(sb.keys() | sn.keys(), key=lambda k: (names[k[0]], *k[1:])):
        b, n = sb.get(key), sn.get(key)
        rec = _record(key, names[key[0]], b, n)
        verdict = _first_verdict(b, n)
        if b is not None and n is not None and b.passed and n.passed:
            rec["flaky"] = _share_failed(n) > _share_failed(b)
        records[key] = rec
        if verdict is not None:
            rec["verdict"] = verdict
            continue
        assert b is not None and n is not None
        nz = noise_by[key[0]]
        sigma = nz["sigma_pct"] / 100
        df = math.inf if nz["df"] is None else nz["df"]
        d = math.log(n.median / b.median)
        se = sigma * math.sqrt(median_variance(b.n) + median_variance(n.n))
        judged.append(_Judged(key, rec, d, se, df, nz["source"] == "assumed", b.n, n.n))

    _judge(judged, noise_by, settings)
    pairs = _pair_across_systems(records, sb, sn) if settings.across_systems else []
    points = sorted([*records.values(), *pairs],
                    key=lambda r: (r["system"], r["config"], r["nodes"], r["gpus"]))
    counts = {v: sum(p["verdict"] == v for p in points) for v in VERDICTS}
    counts["flaky"] = sum(p["flaky"] for p in points)
    shifts = [_shift(names[s], [j for j in judged if j.key[0] == s], noise_by[s], settings)
              for s in sorted(both, key=lambda s: names[s])
              if any(j.key[0] == s for j in judged)]
    out = {
        "base": {"files": base.files, "rows": _rows(base), "dates": _dates(sb.values()),
                 "systems": sorted({names[k[0]] for k in sb})},
        "new": {"files": new.files, "rows": _rows(new), "dates": _dates(sn.values()),
                "systems": sorted({names[k[0]] for k in sn})},
        "noise_files": noise.files if noise is not None else [],
        "settings": {"alpha": settings.alpha, "min_effect_pct": settings.min_effect_pct,
                     "across_systems": settings.across_systems,
                     "require_all": settings.require_all,
                     "sigma_floor_pct": SIGMA_FLOOR_PCT, "assumed_sigma_pct": ASSUMED_SIGMA_PCT,
                     "min_sigma_df": MIN_SIGMA_DF, "noisy_above_pct": NOISY_ABOVE_PCT,
                     "shift_min_points": SHIFT_MIN_POINTS, "drift_pct": DRIFT_PCT},
        "noise": list(noise_by.values()),
        "judged": len(judged),
        "counts": counts,
        "points": points,
        "shifts": shifts,
        "problems": {"base": base.problems, "new": new.problems,
                     "noise_files": noise.problems if noise is not None else []},
    }
    out["exit_code"], out["exit_reason"] = _exit(out)
    return out


def _rows(sweep: Sweep) -> dict[str, int]:
    return {"read": sweep.rows_read,
            "measured": sum(len(p) for p in sweep.measured.values()),
            "without_throughput": len(sweep.without_throughput),
            "failed": len(sweep.failed),
            "not_used": sweep.rows_read - sweep.rows_used}


def _record(key: PointKey, system: str, b: Side | None, n: Side | None) -> dict[str, Any]:
    _, config, nodes, gpus = key
    ratio = None
    if b is not None and n is not None and b.n and n.n:
        ratio = round(n.median / b.median, 4)
    return {
        "verdict": None, "flaky": False, "assumed_noise": False,
        "system": system, "config": config, "nodes": nodes, "gpus": gpus,
        "base": None if b is None else b.data(gpus),
        "new": None if n is None else n.data(gpus),
        "ratio": ratio,
        "change_pct": None if ratio is None else round((ratio - 1) * 100, 1),
        "d": None, "se": None, "z": None, "p": None, "p_adjusted": None,
        "interval_pct": None, "resolves_pct": None, "settle_repeats": None,
    }


def _judge(judged: list[_Judged], noise_by: Mapping[str, Mapping[str, Any]],
           settings: Settings) -> None:
    """z, p and Holm over the family of every judged point; then each point's verdict."""
    alpha, m = settings.alpha, settings.min_effect_pct
    ps = [two_sided_p(j.d / j.se, j.df) for j in judged]
    adjusted = holm(ps)
    bound = m
    for j, p, p_adj in zip(judged, ps, adjusted, strict=True):
        q = upper_quantile(alpha / 2, j.df)
        # Bonferroni's cut, the strictest Holm applies: a change past it is called
        # whatever the other points show, so it is what this point can resolve.
        q_family = upper_quantile(alpha / (2 * len(judged)), j.df)
        lo, hi = _pct(j.d - q * j.se), _pct(j.d + q * j.se)
        change = _pct(j.d)
        rec = j.record
        rec.update(d=round(j.d, 5), se=round(j.se, 5), z=round(j.d / j.se, 3), p=_sig(p),
                   p_adjusted=_sig(p_adj), interval_pct=[lo, hi], change_pct=change,
                   resolves_pct=round((1 - math.exp(-q_family * j.se)) * 100, 1),
                   assumed_noise=j.assumed)
        significant = rec["p_adjusted"] <= alpha
        if significant and abs(change) >= m and min(j.nb, j.nn) >= MIN_CALL_REPEATS:
            rec["verdict"] = "slower" if change < 0 else "faster"
        elif -bound < lo and hi < bound and not (j.assumed and j.nb == j.nn == 1):
            rec["verdict"] = "same"
        else:
            rec["verdict"] = "unsure"
            sigma = noise_by[j.key[0]]["sigma_pct"] / 100
            rec["settle_repeats"] = _settle(j, sigma, q, q_family, m)


def _pair_across_systems(records: dict[PointKey, dict[str, Any]], sb: Mapping[PointKey, Side],
                         sn: Mapping[PointKey, Side]) -> list[dict[str, Any]]:
    """--across-systems: each gone point beside each new point of another system with the
    same config and nodes, as a `different` point (a difference, never a regression). The
    points paired are taken out of ``records``; the pairs are returned."""
    gone = [k for k, r in records.items() if r["verdict"] == "gone"]
    new = [k for k, r in records.items() if r["verdict"] == "new"]
    paired: set[PointKey] = set()
    pairs = []
    for kb in gone:
        for kn in new:
            if kb[0] == kn[0] or kb[1:3] != kn[1:3]:
                continue
            b, n = sb[kb], sn[kn]
            rec = _record(kb, b.system, b, None)
            rec["new"] = n.data(kn[3])
            rec["verdict"] = "different"
            if b.n and n.n:
                rec["ratio"] = round(n.median / b.median, 4)
                rec["change_pct"] = round((rec["ratio"] - 1) * 100, 1)
            pairs.append(rec)
            paired.update((kb, kn))
    for k in paired:
        del records[k]
    return pairs


def _shift(system: str, judged: Sequence[_Judged], noise: Mapping[str, Any],
           settings: Settings) -> dict[str, Any]:
    """The whole study's shift on one system: the geometric mean of its judged points' ratios.

    Its interval is the wider of two: one from sigma (the points' standard errors,
    independent), one from the points' own scatter around their mean (Student's t with
    k - 1 degrees of freedom), so that neither a sigma too small nor points that
    changed by different amounts make it look surer than it is.
    """
    k = len(judged)
    out: dict[str, Any] = {"system": system, "points": k, "ratio": None, "change_pct": None,
                           "interval_pct": None, "verdict": "not judged",
                           "assumed_noise": noise["source"] == "assumed"}
    if k < SHIFT_MIN_POINTS:
        return out
    alpha, m = settings.alpha, settings.min_effect_pct
    ds = [j.d for j in judged]
    mean = math.fsum(ds) / k
    df = judged[0].df
    half_sigma = upper_quantile(alpha / 2, df) * math.sqrt(math.fsum(j.se ** 2 for j in judged)) / k
    half_scatter = upper_quantile(alpha / 2, k - 1) * statistics.stdev(ds) / math.sqrt(k)
    half = max(half_sigma, half_scatter)
    lo, hi, change = _pct(mean - half), _pct(mean + half), _pct(mean)
    out.update(ratio=round(math.exp(mean), 4), change_pct=change, interval_pct=[lo, hi])
    excludes = hi < 0 or lo > 0
    if excludes and abs(change) >= m:
        out["verdict"] = "slower" if change < 0 else "faster"
    elif excludes and abs(change) >= DRIFT_PCT:
        out["verdict"] = "drift"
    else:
        out["verdict"] = "none"
    return out


def _exit(out: Mapping[str, Any]) -> tuple[int, str]:
    """The exit status and why: 1 for anything slower or broken, else 3 when nothing could
    be compared (or, with --require-all, a point is gone), else 0."""
    counts = out["counts"]
    why = [plural(counts[v], f"{v} point") for v in FAILING_VERDICTS if counts[v]]
    why += [f"{s['system']} slower by {-s['change_pct']:.1f}% as a whole"
            for s in out["shifts"] if s["verdict"] == "slower"]
    if why:
        return 1, "; ".join(why)
    if not out["judged"] and not counts["different"] and not counts["fixed"]:
        sb, sn = out["base"]["systems"], out["new"]["systems"]
        if sb and sn and not {s.casefold() for s in sb} & {s.casefold() for s in sn}:
            return 3, (f"nothing comparable: base is on {', '.join(sb)}, new on "
                       f"{', '.join(sn)}; different systems are not compared ("
                       + spelled(opt("across_systems")) + " shows them side by side, as a "
                       "difference)")
        unjudged = [f"{counts[v]} {v}" for v in ("noisy", "unmeasured", "not comparable",
                                                 "failing") if counts[v]]
        if unjudged:
            return 3, ("nothing comparable: of the points in both studies none could be "
                       f"judged ({', '.join(unjudged)})")
        return 3, "nothing comparable: no point is in both studies"
    if out["settings"]["require_all"] and counts["gone"]:
        return 3, (f"{plural(counts['gone'], 'point')} gone from new ("
                   + spelled(opt("require_all")) + ")")
    return 0, ""
