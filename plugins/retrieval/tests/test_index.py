"""The index API: corpus files, tokenisation, both backends, persistence."""

from __future__ import annotations

import json
import random
from pathlib import Path

import bm25s  # type: ignore[import-untyped]
import numpy as np
import pytest
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from rl_verifier import UserError
from rl_verifier_retrieval.index import BM25Index, Document, load_corpus, tokenize


def synthetic(n: int = 400, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(250)]
    return [
        Document(str(i), " ".join(rng.choices(words, k=rng.randint(3, 60))), title=f"t{i % 9}")
        for i in range(n)
    ]


QUERIES = ["w1 w2 w3", "w5 w5 w7", "t3 w10", "w0", "W42 w43, w44!", "nothing here", ""]


def test_tokenize_is_lowercase_word_tokens() -> None:
    assert tokenize("The Eiffel-Tower, in PARIS (1889)!") == [
        "the", "eiffel", "tower", "in", "paris", "1889",
    ]  # fmt: skip
    assert tokenize("the tower of paris", stopwords={"the", "of"}) == ["tower", "paris"]


def test_load_corpus_formats(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rows = [
        {"id": "a", "title": "Paris", "text": "Capital of France."},
        {"id": 7, "text": "no title"},
        {"id": "sr1", "contents": '"Lyon"\nA city in France.'},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    docs = load_corpus(path)
    assert docs == [
        Document("a", "Capital of France.", "Paris"),
        Document("7", "no title"),
        Document("sr1", "A city in France.", "Lyon"),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"text": "x"}', "'id'"),
        ('{"id": "x"}', "needs 'text'"),
        ('{"id": "x", "text": 3}', "'text' must be a string"),
        ('{"id": "a", "text": "dup"}', "duplicate document id"),
    ],
)
def test_load_corpus_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "ok"}\n' + line + "\n")
    with pytest.raises(UserError, match=f"bad.jsonl:2: .*{message}"):
        load_corpus(path)


def test_missing_corpus_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read corpus"):
        load_corpus(tmp_path / "nope.jsonl")


def test_backends_rank_identically() -> None:
    """Same top-k ids in the same order, scores equal to float32 precision (Lucene BM25)."""
    docs = synthetic()
    fast, slow = BM25Index.build(docs, "bm25s"), BM25Index.build(docs, "rank_bm25")
    for query in QUERIES:
        a, b = fast.search(query, k=10), slow.search(query, k=10)
        assert [d.id for d, _ in a] == [d.id for d, _ in b], query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-5), query
        full_a = fast.scorer.scores(tokenize(query))
        full_b = slow.scorer.scores(tokenize(query))
        np.testing.assert_allclose(full_a, full_b, rtol=1e-5, atol=1e-6)


def test_backends_agree_on_custom_k1_b() -> None:
    docs = synthetic(150, seed=3)
    fast = BM25Index.build(docs, "bm25s", k1=0.9, b=0.4)
    slow = BM25Index.build(docs, "rank_bm25", k1=0.9, b=0.4)
    for query in QUERIES:
        a, b = fast.search(query, 8), slow.search(query, 8)
        assert [d.id for d, _ in a] == [d.id for d, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-5)


def test_robertson_variant_equals_okapi_without_idf_floor() -> None:
    """Why the plain classes differ: BM25Okapi's epsilon floor and its (k1 + 1) factor."""
    tokens = [tokenize(d.text) for d in synthetic(60, seed=1)] + [["w1"]] * 80  # df(w1) > N/2
    k1 = 1.5
    robertson = bm25s.BM25(k1=k1, b=0.75, method="robertson")
    robertson.index(tokens, show_progress=False)
    query = ["w1", "w2"]
    ours = robertson.get_scores(query)
    same = BM25Okapi(tokens, k1=k1, b=0.75, epsilon=0.0).get_scores(query) / (k1 + 1)
    stock = BM25Okapi(tokens, k1=k1, b=0.75).get_scores(query) / (k1 + 1)
    np.testing.assert_allclose(ours, same, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ours, stock, rtol=1e-3)  # the default epsilon=0.25 floor differs


def test_search_ranks_best_first_and_skips_non_matches() -> None:
    docs = [
        Document("1", "paris is the capital of france", "France"),
        Document("2", "berlin is the capital of germany"),
        Document("3", "the eiffel tower is in paris paris"),
    ]
    for backend in ("bm25s", "rank_bm25"):
        index = BM25Index.build(docs, backend)
        hits = index.search("paris", k=5)
        assert {d.id for d, _ in hits} == {"1", "3"}
        assert hits[0][1] >= hits[1][1] > 0
        assert index.search("rome") == []
        assert index.search("capital", k=1)[0][0].id in {"1", "2"}


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_save_and_load_round_trip(tmp_path: Path, backend: str) -> None:
    docs = synthetic(120)
    index = BM25Index.build(docs, backend, k1=1.2, b=0.6)
    index.save(tmp_path / "idx")
    again = BM25Index.load(tmp_path / "idx")
    assert again.backend == backend and (again.k1, again.b) == (1.2, 0.6)
    assert len(again) == 120 and "5" in again and "nope" not in again
    assert again.get("5") == docs[5] and again.get("nope") is None
    for query in QUERIES:
        a, b = index.search(query), again.search(query)
        assert [d.id for d, _ in a] == [d.id for d, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b])


def test_empty_index_and_bad_backend(tmp_path: Path) -> None:
    empty = BM25Index.build([])
    assert len(empty) == 0 and empty.search("x") == []
    empty.save(tmp_path / "e")
    assert BM25Index.load(tmp_path / "e").search("x") == []
    with pytest.raises(UserError, match="unknown BM25 backend"):
        BM25Index.build([], "faiss")
    with pytest.raises(UserError, match="not a saved BM25 index"):
        BM25Index.load(tmp_path / "missing")
