"""Prometheus text-format metrics: requests, samples by status, latency histograms."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rl_verifier.base.contracts import Score

PREFIX = "rlv_reward"
LATENCY_BUCKETS_S = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Labels, extra: str = "") -> str:
    parts = [f'{key}="{_escape(value)}"' for key, value in labels]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _le(bound: float | str) -> str:
    return 'le="' + str(bound) + '"'


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass
class _Series:
    counts: list[int]
    total: float = 0.0
    observations: int = 0


@dataclass
class Histogram:
    """Observations in cumulative buckets, one series per label set."""

    name: str
    help: str
    buckets: Sequence[float] = LATENCY_BUCKETS_S
    series: dict[Labels, _Series] = field(default_factory=dict)

    def observe(self, labels: Labels, value: float) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = _Series([0] * len(self.buckets))
        for position, bound in enumerate(self.buckets):
            if value <= bound:
                series.counts[position] += 1
                break
        series.total += value
        series.observations += 1

    def lines(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        for labels, series in sorted(self.series.items()):
            running = 0
            for bound, count in zip(self.buckets, series.counts, strict=True):
                running += count
                yield f"{self.name}_bucket{_labels(labels, _le(bound))} {running}"
            yield f"{self.name}_bucket{_labels(labels, _le('+Inf'))} {series.observations}"
            yield f"{self.name}_sum{_labels(labels)} {_number(series.total)}"
            yield f"{self.name}_count{_labels(labels)} {series.observations}"


def _counter_lines(name: str, help: str, values: Counter[Labels]) -> Iterable[str]:
    yield f"# HELP {name} {help}"
    yield f"# TYPE {name} counter"
    for labels, value in sorted(values.items()):
        yield f"{name}{_labels(labels)} {value}"


def _gauge_lines(name: str, help: str, value: float) -> Iterable[str]:
    yield f"# HELP {name} {help}"
    yield f"# TYPE {name} gauge"
    yield f"{name} {_number(value)}"


class Metrics:
    """What the server counts; ``render`` writes it for a Prometheus scrape."""

    def __init__(self) -> None:
        self.requests: Counter[Labels] = Counter()
        self.samples: Counter[Labels] = Counter()
        self.disconnects = 0
        self.sample_seconds = Histogram(
            f"{PREFIX}_sample_seconds", "Seconds to score one sample, by verifier."
        )
        self.request_seconds = Histogram(
            f"{PREFIX}_request_seconds", "Seconds from request to answer, by endpoint."
        )

    def request(self, endpoint: str, code: int, seconds: float | None = None) -> None:
        self.requests[(("endpoint", endpoint), ("code", str(code)))] += 1
        if seconds is not None:
            self.request_seconds.observe((("endpoint", endpoint),), seconds)

    def scores(self, scores: Iterable[Score]) -> None:
        for score in scores:
            verifier = (("verifier", score.verifier.name),)
            self.samples[(*verifier, ("status", score.status.value))] += 1
            self.sample_seconds.observe(verifier, score.elapsed_s)

    def render(self, pending_samples: int, held_bytes: int, open_requests: int) -> str:
        lines = [
            *_counter_lines(f"{PREFIX}_requests_total", "Requests by endpoint and HTTP code.",
                            self.requests),
            *_counter_lines(f"{PREFIX}_samples_total", "Samples scored, by verifier and status.",
                            self.samples),
            *_counter_lines(f"{PREFIX}_disconnects_total",
                            "Requests whose client went away before the answer; their work "
                            "was cancelled.", Counter({(): self.disconnects})),
            *self.sample_seconds.lines(),
            *self.request_seconds.lines(),
            *_gauge_lines(f"{PREFIX}_pending_samples", "Samples admitted and not yet answered.",
                          pending_samples),
            *_gauge_lines(f"{PREFIX}_held_body_bytes", "Bytes of request bodies held.",
                          held_bytes),
            *_gauge_lines(f"{PREFIX}_open_requests", "Requests being read, scored or answered.",
                          open_requests),
        ]  # fmt: skip
        return "\n".join(lines) + "\n"
