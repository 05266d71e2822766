"""Where a row's numbers came from, as typed records, serialised in one place.

The export builds one :class:`Details` per run. ``--explain`` reads its
attributes; ``--format json`` and anything else that stores a run's story
read :meth:`ezpz_amsc.flow.export.ExportResult.to_data`, the one serialisation of a
result, built on :func:`as_data`. Numpy-free: the series arrive already reduced
and squeezed to sparkline width, as plain floats and ``None`` (a step with no
finite value).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ezpz_amsc.text import Message, Text

# The series the sparkline draws, in order of preference (throughput; a run that
# logs none gets its step time), and what each one is.
TREND_SERIES = {"tps": "throughput", "tps_per_gpu": "throughput per GPU", "dt": "step time"}


@dataclass
class StepCoverage:
    """Which step numbers the logged records cover, when they leave gaps."""

    logged: int  # distinct step numbers logged
    first: int
    last: int
    stride: int  # the most common distance between consecutive logged step numbers
    estimated_total: int  # steps the run likely took up to the last logged one


@dataclass
class Segment:
    """One attempt: records (file order) whose step numbers increase, on one world size."""

    start: int  # index among the training-step records, file order
    stop: int
    first_step: float | None
    last_step: float | None
    first_timestamp: float | None
    ranks: int | None  # train/tps / train/tps_per_gpu, when logged and whole

    @property
    def records(self) -> int:
        return self.stop - self.start


@dataclass
class SeriesDetail:
    """How one per-step series was reduced."""

    key: str | None  # the metrics key it was read from; None when never logged
    present: int  # finite values over all steps
    used: int  # values the reducer saw
    dropped_warmup: int
    kept_warmup: bool  # warmup would have left nothing, so it was kept
    value: float | None
    p10: float | None
    p90: float | None
    all_zero: bool  # every finite value is exactly 0.0 (ezpz's "mfu unknown")


@dataclass
class Trend:
    """The series the sparkline draws, squeezed to at most a screen's width of points."""

    series: str  # a key of TREND_SERIES
    key: str | None
    steps: int
    warmup_steps: int
    steps_per_point: int
    warmup: list[float | None]  # points of the dropped warmup steps
    used: list[float | None]  # points of the steps that were reduced


@dataclass
class ProvenanceDetail:
    """The provenance files the placement read, and the file each value came from."""

    tiers: list[str]  # files that contributed, relative to the run directory
    sources: dict[str, str]  # provenance key -> the file it came from


@dataclass
class PlacementDetail:
    """Each column's derivation, e.g. ``gpus 12 = max(WORLD_SIZE_IN_USE 12, world_size 12)``."""

    system: Text
    gpus: Text
    nodes: Text


@dataclass
class Details:
    """Everything ``--explain`` shows about one exported run (its notes are the result's)."""

    run_dir: str
    metrics_scheme: str | None  # "per-rank", "interleaved", "run-id"; None: no metrics file
    files_read: list[str]
    rank_files_not_read: int
    other_rank_records: int  # records of other ranks skipped in the files read
    rank: int | None
    provenance: ProvenanceDetail
    placement: PlacementDetail
    steps: int
    steps_used: int
    steps_dropped_warmup: int
    warmup: int
    reducer: str
    series: dict[str, SeriesDetail]  # empty when no step was logged
    trend: Trend | None
    step_coverage: StepCoverage | None  # set only when the step numbers have gaps
    attempts: list[Segment]
    attempt: int | None  # 1-based attempt exported, when --attempt chose one
    unfinished: list[str]  # signs that the job did not reach History.finalize()


def as_data(value: Any) -> Any:
    """Dataclasses as dicts of their fields in order, containers copied, the rest as is.

    ``dataclasses.asdict`` does the same but deep-copies every number: 4x slower.
    """
    if isinstance(value, Message):  # a derivation naming an option: as the docs spell it
        return value.render()
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: as_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [as_data(v) for v in value]
    if isinstance(value, dict):
        return {k: as_data(v) for k, v in value.items()}
    return value
