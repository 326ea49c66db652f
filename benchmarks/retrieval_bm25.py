"""BM25 backends side by side, and retrieval-verifier scoring throughput.

1. Builds a BM25 index of a deterministic synthetic corpus (100k documents of ~50
   Zipf-distributed words) with bm25s and with rank_bm25, and times build and queries;
   prints the query-throughput ratio (target for the default, bm25s: >= 10x rank_bm25).
2. Times saving and memory-mapped loading of the bm25s index.
3. Scores 10k completions with the ``retrieval`` verifier through the inline executor
   (target: >= 2,000 samples/s per core).

Run: .venv/bin/python benchmarks/retrieval_bm25.py [--docs N] [--samples N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from rl_verifier import Completion, Task
from rl_verifier.base.reward import Reward
from rl_verifier.scoring.engine import Sample, make_executor, score_batch
from rl_verifier_retrieval.index import BM25Index, Document
from rl_verifier_retrieval.verifier import RetrievalVerifier

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

T = TypeVar("T")


def timed(run: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def synthetic_corpus(count: int, words: int = 50, vocab: int = 30_000) -> list[Document]:
    """``count`` documents of ``words`` Zipf(1)-distributed words; same output every run."""
    rng = np.random.default_rng(1234)
    ranks = np.arange(1, vocab + 1)
    probabilities = 1.0 / ranks
    probabilities /= probabilities.sum()
    names = np.array([f"w{i}" for i in range(vocab)])
    ids = rng.choice(vocab, size=(count, words), p=probabilities)
    return [Document(str(i), " ".join(names[row])) for i, row in enumerate(ids)]


def make_queries(docs: list[Document], count: int) -> list[str]:
    rng = np.random.default_rng(99)
    queries = []
    for i in rng.integers(0, len(docs), size=count):
        tokens = docs[int(i)].text.split()
        picks = rng.choice(len(tokens), size=4, replace=False)
        queries.append(" ".join(tokens[int(j)] for j in picks))
    return queries


def query_rate(index: BM25Index, queries: list[str]) -> float:
    _, seconds = timed(lambda: [index.search(q, k=10) for q in queries])
    return len(queries) / seconds


def backends(docs: int, fast_queries: int, slow_queries: int) -> None:
    corpus, gen_s = timed(lambda: synthetic_corpus(docs))
    print(f"corpus: {docs:,} docs x 50 words, generated in {gen_s:.1f}s")
    queries = make_queries(corpus, fast_queries)
    fast, fast_build = timed(lambda: BM25Index.build(corpus, "bm25s"))
    slow, slow_build = timed(lambda: BM25Index.build(corpus, "rank_bm25"))
    fast_rate = query_rate(fast, queries)
    slow_rate = query_rate(slow, queries[:slow_queries])
    same = all(
        [d.id for d, _ in fast.search(q, 10)] == [d.id for d, _ in slow.search(q, 10)]
        for q in queries[:5]
    )
    print(f"{'backend':<12}{'build s':>10}{'queries/s':>12}")
    print(f"{'bm25s':<12}{fast_build:>10.2f}{fast_rate:>12.1f}")
    print(f"{'rank_bm25':<12}{slow_build:>10.2f}{slow_rate:>12.1f}")
    ratio = fast_rate / slow_rate
    verdict = "meets" if ratio >= 10 else "MISSES"
    print(f"query throughput ratio bm25s / rank_bm25: {ratio:.1f}x ({verdict} the 10x target)")
    print(f"same top-10 ids on 5 sample queries: {same}")
    with tempfile.TemporaryDirectory() as folder:
        _, save_s = timed(lambda: fast.save(Path(folder)))
        loaded, load_s = timed(lambda: BM25Index.load(Path(folder)))
        print(f"bm25s index: saved in {save_s:.2f}s, loaded (mmap) in {load_s:.2f}s")
        print(f"loaded index: {query_rate(loaded, queries[:200]):.1f} queries/s")


def scoring_batch(count: int) -> list[Sample]:
    docs = [
        {"id": "d1", "title": "France", "text": "Paris is the capital of France."},
        {"id": "d2", "title": "Paris", "text": "Paris hosts the French government."},
        {"id": "d3", "title": "Lyon", "text": "Lyon is a large French city."},
        {"id": "d4", "title": "Berlin", "text": "Berlin is the capital of Germany."},
        {"id": "d5", "title": "London", "text": "London is the capital of England."},
    ]
    tasks = [
        Task(id="s", prompt="q", reference={"answers": ["Paris"], "support": ["d1", "d2"]}),
        Task(id="c", prompt="q", reference={"answers": ["Paris"]}, metadata={"docs": docs}),
    ]
    for task in tasks:
        task.reference.setdefault("docs", docs)
    texts = ["Paris [d1][d2]", "Paris [1]", "London [d1][d5]", "The city is Paris [d9]"]
    return [
        Sample(task, Completion(task_id=task.id, completion=texts[i % len(texts)]), i)
        for i in range(count)
        for task in [tasks[i % 2]]
    ]


def scoring(count: int) -> None:
    samples = scoring_batch(count)
    reward = Reward.of(RetrievalVerifier())
    jobs = [(reward, s) for s in samples]
    result, seconds = timed(lambda: asyncio.run(score_batch(jobs, make_executor("inline"))))
    assert len(result.scores) == count
    rate = count / seconds
    verdict = "meets" if rate >= 2000 else "MISSES"
    print(f"retrieval scoring, inline executor: {count:,} samples in {seconds:.2f}s")
    print(f"  {rate:,.0f} samples/s on one core ({verdict} the 2,000/s target)")
    verifier = RetrievalVerifier()
    _, direct_s = timed(lambda: [verifier.verify(s.task, s.completion) for s in samples])
    print(f"  verify() alone, no engine: {count / direct_s:,.0f} samples/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--slow-queries", type=int, default=30)
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    backends(args.docs, args.queries, args.slow_queries)
    print()
    scoring(args.samples)


if __name__ == "__main__":
    main()
