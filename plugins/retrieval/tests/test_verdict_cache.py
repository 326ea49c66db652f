"""The verdict cache keys on the corpus's content: a corpus rewritten at the same path is
judged anew by `rlv verify`, and a corpus restored to its first content gets its first
verdicts back; with an entailment hook (code the key cannot cover) nothing is cached. A
damaged corpus index cache is rebuilt, never an error on every sample."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rl_verifier_retrieval.cache import open_corpus_index
from rl_verifier_retrieval.verifier import RetrievalVerifier

TASK = {"id": "q1", "prompt": "Capital of France?", "reference": {"answers": ["Paris"]}}
PARIS = {"id": "d1", "text": "Paris is the capital of France."}
OTHER = {"id": "d2", "text": "Nothing about it here."}


def verify(tmp_path: Path, corpus: Path, run: str) -> dict:
    tasks, completions = tmp_path / "tasks.jsonl", tmp_path / "completions.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n")
    completions.write_text(json.dumps({"task_id": "q1", "completion": "Paris [doc:d1]"}) + "\n")
    out = tmp_path / f"{run}.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", "from rl_verifier.cli.app import main; main()", "verify",
         "--verifier", "retrieval", "--config", f"corpus={corpus}", "--tasks", str(tasks),
         "--completions", str(completions), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RLV_VERDICT_CACHE": str(tmp_path / "verdicts.sqlite")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    return row


def test_a_rewritten_corpus_is_judged_anew_by_rlv_verify(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps(PARIS) + "\n")
    first = verify(tmp_path, corpus, "first")
    assert first["reward"] == 1.0 and not first["info"].get("cached")
    corpus.write_text(json.dumps(OTHER) + "\n")  # d1 no longer exists: a hallucination
    second = verify(tmp_path, corpus, "second")
    assert not second["info"].get("cached")
    assert second["components"]["hallucinated_share"] == 1.0 and second["reward"] < 0.2
    assert second["verifier"]["config_hash"] != first["verifier"]["config_hash"]
    corpus.write_text(json.dumps(PARIS) + "\n")
    third = verify(tmp_path, corpus, "third")
    assert third["info"].get("cached") and third["reward"] == 1.0


def test_an_entailment_hook_makes_verdicts_uncacheable(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps(PARIS) + "\n")
    plain = RetrievalVerifier({"corpus": str(corpus)})
    hooked = RetrievalVerifier({"corpus": str(corpus), "entailment": "os.path:exists"})
    assert plain.cacheable and not hooked.cacheable


@pytest.mark.parametrize("damage", ["meta", "truncated", "settings"])
def test_a_damaged_corpus_index_cache_is_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps(PARIS) + "\n" + json.dumps(OTHER) + "\n")
    open_corpus_index(corpus, backend="bm25s")
    [saved] = (tmp_path / ".rlv-bm25").iterdir()
    meta = json.loads((saved / "meta.json").read_text())
    if damage == "meta":
        (saved / "meta.json").write_text("{broken")
    elif damage == "truncated":  # a document lost: citations of it would be hallucinations
        (saved / "docs.jsonl").write_text(json.dumps(PARIS) + "\n")
    else:
        (saved / "meta.json").write_text(json.dumps({**meta, "k1": 9.0}))
    with caplog.at_level(logging.WARNING):
        index = open_corpus_index(corpus, backend="bm25s")
    assert len(index) == 2 and "d2" in index
    assert [r.message for r in caplog.records if "rebuilt" in r.message], caplog.text
    caplog.clear()
    assert len(open_corpus_index(corpus, backend="bm25s")) == 2  # the rebuilt copy is kept
    assert not caplog.records and json.loads((saved / "meta.json").read_text()) == meta
