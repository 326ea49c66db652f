"""Batched sampling: concurrent sample requests decoded together give each request what it
would get alone (seeded or greedy), keep their own stop rules and limits, fail and cancel
alone; the batcher groups jobs by sampler, bounds a batch, and never runs a job ahead of
work queued before it."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from rlv_numerics import assert_float32_close

from rl_verifier import UserError
from rl_verifier_server.models.tiny_model import ensure_tiny_model
from rl_verifier_server.runtime import ModelHost
from rl_verifier_server.runtime.decoding import DecodeRequest
from rl_verifier_server.runtime.types import Cancelled, SampledSequence, SamplingParams
from rl_verifier_server.scheduling.compute import ComputeThread
from rl_verifier_server.scheduling.futures import FutureTable
from rl_verifier_server.scheduling.sample_batches import Part, SampleBatches, SampleJob

# Runtime: one batched generation on the tiny chat model ---------------------------------


@pytest.fixture(scope="module")
def host() -> Iterator[ModelHost]:
    loaded = ModelHost.load(ensure_tiny_model(), "rlv/tiny-chat", "cpu")
    yield loaded
    loaded.close()


TEXTS = [
    "hello there, how are",
    "the cat",
    "a much longer prompt, with many more words in it than the others have",
    "the cat",
]
OPTIONS: list[dict[str, Any]] = [
    {"num_samples": 3, "max_tokens": 12, "stop": [], "seed": 1},
    {"num_samples": 1, "max_tokens": 5, "stop": [], "temperature": 0.0},
    {"num_samples": 2, "max_tokens": 20, "stop": ["e"], "seed": 3, "top_p": 0.8},
    {"num_samples": 4, "max_tokens": 8, "stop": [], "seed": 4, "top_k": 5},
]


def prompts(host: ModelHost) -> list[list[int]]:
    return [list(host.base.tokenizer.encode(text)) for text in TEXTS]


def alone(host: ModelHost) -> list[list[SampledSequence]]:
    return [
        host.sampling.sample(None, prompt, **options)
        for prompt, options in zip(prompts(host), OPTIONS, strict=True)
    ]


def requests(host: ModelHost, **extra: Any) -> list[DecodeRequest]:
    return [
        host.sampling.prepare(prompt, **options, **extra)
        for prompt, options in zip(prompts(host), OPTIONS, strict=True)
    ]


def tokens(result: object) -> list[list[int]]:
    assert isinstance(result, list), result
    return [sequence.tokens for sequence in result]


def test_a_batch_gives_each_request_what_it_gets_alone(host: ModelHost) -> None:
    expected = alone(host)
    batched = host.sampling.run(None, requests(host))
    for one, together in zip(expected, batched, strict=True):
        assert isinstance(together, list)
        assert tokens(together) == tokens(one)
        assert [s.stop_reason for s in together] == [s.stop_reason for s in one]
        for a, b in zip(one, together, strict=True):
            # a left-padded batch sums the same float32 terms in other orders; a row's
            # logprobs given to another row, or pads attended, are off by 0.1 or more
            assert_float32_close(b.logprobs, a.logprobs, terms=host.base.vocab_size)
    # each request kept its own limits and stop rules in the shared batch
    assert [len(s.tokens) for s in batched[0]] == [12, 12, 12]  # type: ignore[union-attr]
    assert [len(s.tokens) for s in batched[1]] == [5]  # type: ignore[union-attr]
    stopped = batched[2]
    assert isinstance(stopped, list)
    decode = host.base.tokenizer.decode
    for sequence in stopped:  # ended by the token that completes "e", or by max_tokens
        if sequence.stop_reason == "stop":
            assert "e" in decode(sequence.tokens) and "e" not in decode(sequence.tokens[:-1])
        else:
            assert len(sequence.tokens) == 20 and "e" not in decode(sequence.tokens)


def test_a_failing_listener_fails_its_request_alone(host: ModelHost) -> None:
    expected = alone(host)
    batch = requests(host)
    heard: list[int] = []

    def broken(sample: int, token: int, lp: float, top: list[tuple[int, float]]) -> None:
        heard.append(token)
        if len(heard) == 2:
            raise RuntimeError("the client's stream broke")

    batch[0].on_token = broken
    results = host.sampling.run(None, batch)
    assert isinstance(results[0], RuntimeError)
    assert len(heard) == 2  # not called again once its request failed
    assert [tokens(r) for r in results[1:]] == [tokens(r) for r in expected[1:]]


def test_a_request_whose_own_draw_fails_fails_alone(host: ModelHost) -> None:
    expected = alone(host)
    batch = requests(host)
    batch[2].params = SamplingParams(temperature=math.nan)  # past every check: its draw raises
    results = host.sampling.run(None, batch)
    assert isinstance(results[2], RuntimeError), results[2]
    assert [tokens(r) for r in (results[0], results[1], results[3])] == [
        tokens(r) for r in (expected[0], expected[1], expected[3])
    ]


@pytest.mark.parametrize(
    "tiny",
    [{"temperature": 1e-300}, {"temperature": 1e-46}, {"temperature": 5e-6}, {"top_p": 1e-300}],
)
def test_tiny_temperatures_and_top_p_sample_greedily_in_a_batch(
    host: ModelHost, tiny: dict[str, float]
) -> None:
    expected = alone(host)
    prompt = prompts(host)[0]
    greedy = host.sampling.sample(None, prompt, 2, 10, temperature=0.0, stop=[])
    batch = [*requests(host), host.sampling.prepare(prompt, 2, 10, stop=[], seed=7, **tiny)]
    results = host.sampling.run(None, batch)
    assert tokens(results[-1]) == tokens(greedy)
    assert [tokens(r) for r in results[:-1]] == [tokens(r) for r in expected]


def test_a_cancelled_request_leaves_the_batch_at_the_next_token(host: ModelHost) -> None:
    expected = alone(host)
    batch = requests(host)
    heard: list[int] = []
    batch[3].on_token = lambda sample, token, lp, top: heard.append(token)
    batch[3].cancelled = lambda: len(heard) >= 4  # after the first step's 4 samples
    finished: list[object] = []
    batch[3].on_done = finished.append
    results = host.sampling.run(None, batch)
    assert isinstance(results[3], Cancelled) and finished == [results[3]]
    assert len(heard) == 4
    assert [tokens(r) for r in results[:3]] == [tokens(r) for r in expected[:3]]


# The batcher: which jobs run together, and in what order ---------------------------------


class FakeSampling:
    """Stands in for ``Sampling``: records each batch and answers every request with one
    sequence holding its job's number."""

    def __init__(self, log: list[object]) -> None:
        self.log = log

    def run(self, sampler_id: str | None, batch: list[Any]) -> list[object]:
        self.log.append((sampler_id, [request.number for request in batch]))
        results: list[object] = []
        for request in batch:
            result = (
                Cancelled("cancelled")
                if request.cancelled()
                else [SampledSequence([request.number], [0.0], "length")]
            )
            request.on_done(result)
            results.append(result)
        return results


def job(
    sampling: FakeSampling, number: int, sampler: str = "a", rows: int = 1,
    prepare_error: Exception | None = None,
) -> SampleJob:  # fmt: skip
    def prepare() -> list[Part]:
        if prepare_error is not None:
            raise prepare_error
        request = cast(DecodeRequest, SimpleNamespace(number=number))
        return [Part(sampling, sampler, request)]

    def finish(results: list[list[SampledSequence]]) -> int:
        [[sequence]] = results
        return sequence.tokens[0]

    return SampleJob(prepare, finish, rows=rows)


def on_held_compute(
    scenario: Callable[[ComputeThread, SampleBatches, list[object]], list[asyncio.Future[Any]]],
    max_rows: int = 64,
) -> tuple[list[object], list[object]]:
    """Run ``scenario`` while the compute thread is held busy, then let it go: the batches
    and work the compute thread ran, and each future's value or exception."""
    log: list[object] = []
    compute = ComputeThread(FutureTable())
    batches = SampleBatches(compute, window_s=0.0, max_rows=max_rows)
    release = threading.Event()

    def hold() -> None:
        release.wait()

    async def main() -> list[object]:
        compute.later(hold)
        answers = scenario(compute, batches, log)
        release.set()
        # the compute thread takes every queued job before the event loop runs again: a
        # cancel made on the loop must be seen without the loop's callbacks having run
        deadline = time.monotonic() + 10
        while batches._pending and time.monotonic() < deadline:
            time.sleep(0.001)
        return list(await asyncio.gather(*answers, return_exceptions=True))

    try:
        return log, asyncio.run(main())
    finally:
        compute.close()


def test_jobs_queued_together_run_as_one_batch_per_sampler() -> None:
    def scenario(_: ComputeThread, batches: SampleBatches, log: list[object]) -> list[Any]:
        fake = FakeSampling(log)
        numbers = [(1, "a"), (2, "b"), (3, "a"), (4, "a")]
        return [batches.submit(job(fake, n, sampler)) for n, sampler in numbers]

    log, values = on_held_compute(scenario)
    assert log == [("a", [1, 3, 4]), ("b", [2])]
    assert values == [1, 2, 3, 4]


def test_a_batch_holds_at_most_max_rows_samples() -> None:
    def scenario(_: ComputeThread, batches: SampleBatches, log: list[object]) -> list[Any]:
        fake = FakeSampling(log)
        return [batches.submit(job(fake, n, rows=rows)) for n, rows in [(1, 3), (2, 2), (3, 2)]]

    log, values = on_held_compute(scenario, max_rows=4)
    assert log == [("a", [1]), ("a", [2, 3])]
    assert values == [1, 2, 3]


def test_a_job_never_runs_ahead_of_work_queued_before_it() -> None:
    def scenario(compute: ComputeThread, batches: SampleBatches, log: list[object]) -> list[Any]:
        fake = FakeSampling(log)
        first = batches.submit(job(fake, 1))
        compute.later(lambda: log.append("training step"))
        second = batches.submit(job(fake, 2))
        third = batches.submit(job(fake, 3))
        return [first, second, third]

    log, values = on_held_compute(scenario)
    assert log == [("a", [1]), "training step", ("a", [2, 3])]
    assert values == [1, 2, 3]


def test_a_failing_job_fails_alone_and_a_cancelled_one_never_runs() -> None:
    def scenario(_: ComputeThread, batches: SampleBatches, log: list[object]) -> list[Any]:
        fake = FakeSampling(log)
        bad = batches.submit(job(fake, 1, prepare_error=UserError("no such sampler")))
        gone = batches.submit(job(fake, 2))
        good = batches.submit(job(fake, 3))
        gone.cancel()
        return [bad, gone, good]

    log, values = on_held_compute(scenario)
    assert log == [("a", [3])]
    assert isinstance(values[0], UserError) and str(values[0]) == "no such sampler"
    assert isinstance(values[1], asyncio.CancelledError)
    assert values[2] == 3
