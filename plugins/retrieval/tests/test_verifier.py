"""Rewards of the specification, adversarial completions and the configurable parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, UserError, Verdict
from rl_verifier_retrieval.verifier import RetrievalVerifier

DOCS = [
    {"id": "d1", "title": "France", "text": "Paris is the capital of France."},
    {"id": "d2", "title": "Paris", "text": "Paris hosts the French government."},
    {"id": "d3", "title": "Lyon", "text": "Lyon is a large French city."},
    {"id": "d4", "title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"id": "d5", "title": "London", "text": "London is the capital of England."},
]


def paris_task(support: list[str] | None = None, **extra: Any) -> Task:
    reference: dict[str, Any] = {"answers": ["Paris"], "docs": DOCS, **extra}
    if support is not None:
        reference["support"] = support
    return Task(id="paris", prompt="What is the capital of France?", reference=reference)


def judge(text: str, task: Task | None = None, **config: Any) -> Verdict:
    task = task or paris_task(["d1", "d2"])
    verifier = RetrievalVerifier(config)
    return verifier.verify(task, Completion(task_id=task.id, completion=text))


ALL = "[d1][d2][d3][d4][d5]"


@pytest.mark.parametrize(
    ("text", "reward"),
    [
        ("Paris [d1][d2]", 1.0),
        ("Paris [d1]", 0.8667),
        (f"Paris {ALL}", 0.8286),
        ("Paris", 0.6),
        ("London [d1][d2]", 0.4),
        ("Paris [d9]", 0.1),
    ],
)
def test_specified_rewards(text: str, reward: float) -> None:
    verdict = judge(text)
    assert verdict.status is Status.OK
    assert verdict.reward == pytest.approx(reward, abs=5e-5)


def test_components() -> None:
    verdict = judge("Paris [d1][d9]")
    assert verdict.components == pytest.approx(
        {
            "answer": 1.0,
            "citation_precision": 0.5,
            "citation_recall": 0.5,
            "citation_f1": 0.5,
            "hallucinated_share": 0.5,
        }
    )
    assert verdict.info["cited"] == ["d1", "d9"]


@pytest.mark.parametrize("text", ["", "   \n", "[d1][d2]", " [1] [doc:d2] "])
def test_empty_or_citation_only_output_is_invalid(text: str) -> None:
    assert judge(text).status is Status.INVALID


def test_citing_every_document_scores_below_precise_citation() -> None:
    assert judge(f"Paris {ALL}").reward < judge("Paris [d1][d2]").reward
    spam = "Paris " + "".join(f"[d{i}]" for i in range(1, 60))  # 54 invented ids
    verdict = judge(spam)
    assert verdict.components["hallucinated_share"] > 0.9
    assert verdict.reward < judge("Paris").reward  # worse than citing nothing


def test_citations_beyond_the_cap_are_never_credited() -> None:
    padded = "Paris [d3][d4][d5][d1][d2]"
    assert judge(padded, max_citations=3).components["citation_recall"] == 0.0
    assert judge(padded, max_citations=3).reward < judge("Paris", max_citations=3).reward + 1e-9
    assert judge(padded, max_citations=5).components["citation_recall"] == 1.0
    assert judge(padded, max_citations=3).info["over_cap"] == 2


def test_invented_ids_are_hallucinations() -> None:
    verdict = judge("Paris [doc:wiki-123][d1]")
    assert verdict.components["hallucinated_share"] == 0.5
    assert judge("Paris [doc:nope]").reward == pytest.approx(0.1)


def test_repeated_citations_count_once() -> None:
    assert judge("Paris [d1][d1][d1][d1]").reward == pytest.approx(judge("Paris [d1]").reward)


def test_mixed_formats_do_not_dodge_the_dedupe() -> None:
    verdict = judge("Paris [d1] [1] [doc:d1] [D1] [1, 1]")
    assert verdict.info["cited"] == ["d1"]
    assert verdict.reward == pytest.approx(judge("Paris [d1]").reward)
    assert judge("Paris [1][2]").reward == pytest.approx(1.0)
    assert judge("Paris [1, 2]").reward == pytest.approx(1.0)


def test_answer_stuffing() -> None:
    stuffed = "Paris London Berlin Rome [d1][d2]"
    assert judge(stuffed).components["answer"] == 0.0
    assert judge(stuffed, answer_match="f1").components["answer"] == pytest.approx(0.4)
    assert judge("The Paris. [d1][d2]", answer_match="f1").components["answer"] == 1.0


def test_answer_pattern() -> None:
    text = "Thinking about it [d4]... <answer>Paris</answer> see [d1][d2]"
    assert judge(text, answer_pattern=r"<answer>(.*?)</answer>").reward == pytest.approx(
        1 - 0.4 * (1 - 0.8)  # precision 2/3, recall 1 -> F1 0.8
    )
    assert judge("Paris", answer_pattern=r"<answer>(.*?)</answer>").status is Status.INVALID


def test_custom_citation_pattern() -> None:
    verdict = judge("Paris (source: d1) (source: d2)", citation_pattern=r"\(source: (\w+)\)")
    assert verdict.reward == pytest.approx(1.0)


def test_positional_citations_without_ids() -> None:
    docs = [{"title": d["title"], "text": d["text"]} for d in DOCS]
    task = Task(id="alce", prompt="q", metadata={"docs": docs}, reference={"answers": ["Paris"]})
    assert judge("Paris [1][2]", task).reward == pytest.approx(1.0)  # both contain Paris
    assert judge("Paris [d1][d3]", task).components["citation_precision"] == 0.5
    assert judge("Paris [4]", task).components["citation_recall"] == 0.0
    assert judge("Paris [7]", task).components["hallucinated_share"] == 1.0


def test_support_by_content_checks() -> None:
    task = paris_task(None)
    contains = judge("Paris [d1][d3]", task)
    assert contains.components["citation_precision"] == 0.5
    assert contains.components["citation_recall"] == 1.0
    multi = Task(
        id="m",
        prompt="q",
        reference={"answers": ["capital of France"], "docs": DOCS},
    )
    overlap = judge("capital of France [d4]", multi, support_check="bm25_overlap")
    assert overlap.components["citation_precision"] == 0.0  # 'capital' alone is not enough
    assert (
        judge("capital of France [d1]", multi, support_check="bm25_overlap").components[
            "citation_precision"
        ]
        == 1.0
    )


def always_entailed(doc_text: str, answer_sentence: str) -> bool:
    return "Lyon" in doc_text and answer_sentence == "Paris"


def test_entailment_hook() -> None:
    hook = f"{__name__}:always_entailed"
    verdict = judge("Paris [d1][d3]", paris_task(None), entailment=hook)
    assert verdict.info["cited"] == ["d1", "d3"]
    assert verdict.components["citation_precision"] == 0.5  # only d3 passes the hook
    with pytest.raises(UserError, match="module:function"):
        judge("Paris", paris_task(None), entailment="nonsense")


def test_weights_are_configurable() -> None:
    verdict = judge("Paris [d9]", answer_weight=1.0, hallucination_penalty=0.25)
    assert verdict.reward == pytest.approx(0.75)


def test_bad_reference_is_a_task_error() -> None:
    task = Task(id="x", prompt="q", reference={"docs": DOCS})
    assert judge("Paris", task).status is Status.ERROR


def test_bad_config_is_rejected() -> None:
    with pytest.raises(UserError, match="answer_pattern"):
        RetrievalVerifier({"answer_pattern": "("})


def test_corpus_config_indexes_once_and_caches(tmp_path: Path) -> None:
    corpus = tmp_path / "wiki.jsonl"
    rows = [{"id": f"w{i}", "title": "", "text": f"filler text number {i}"} for i in range(20)]
    rows[3] = {"id": "w3", "contents": '"France"\nParis is the capital of France.'}
    corpus.write_text("\n".join(json.dumps(r) for r in rows))
    task = Task(id="c", prompt="q", reference={"answers": ["Paris"], "support": ["w3"]})
    first = judge("Paris [doc:w3]", task, corpus=str(corpus))
    assert first.reward == pytest.approx(1.0)
    cached = list((tmp_path / ".rlv-bm25").iterdir())
    assert len(cached) == 1 and (cached[0] / "meta.json").exists()
    again = judge("Paris [doc:w3] [doc:w99]", task, corpus=str(corpus))
    assert again.components["hallucinated_share"] == 0.5
    assert judge("Paris [w3]", task, corpus=str(corpus), citation_pattern=r"\[(w\d+)\]").reward == (
        pytest.approx(1.0)
    )
    other = tmp_path / "cache"
    judge("Paris", task, corpus=str(corpus), cache_dir=str(other), backend="rank_bm25")
    assert len(list(other.iterdir())) == 1


def test_integer_support_is_positional() -> None:
    task = paris_task(None)
    task.reference["support"] = [1, 2]
    assert judge("Paris [d1][d2]", task).reward == pytest.approx(1.0)
    assert judge("Paris [2]", task).reward == pytest.approx(0.8667, abs=5e-5)
