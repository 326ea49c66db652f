"""The ``retrieval`` verifier: a correct answer, backed by citations of real, supporting docs."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from rl_verifier import (
    Completion,
    InputFile,
    Regex,
    Task,
    UserError,
    Verdict,
    Verifier,
    VerifierConfig,
)
from rl_verifier_retrieval.answers import exact_match, token_f1
from rl_verifier_retrieval.citations import parse_citations, strip_citations
from rl_verifier_retrieval.corpus import Document, inline_documents
from rl_verifier_retrieval.metrics import Weights, citation_scores
from rl_verifier_retrieval.support import (
    Entailment,
    contains_answer,
    load_entailment,
    overlap_support,
)

if TYPE_CHECKING:
    from rl_verifier_retrieval.index import BM25Index  # numpy, bm25s: on the first corpus

# Longest completion judged (characters): an answer with citations is a few sentences; the
# bound keeps every pass over the text, answer_pattern and citation_pattern included, short.
MAX_COMPLETION_CHARS = 20_000


class RetrievalConfig(VerifierConfig):
    """Settings of the ``retrieval`` verifier."""

    corpus: InputFile | None = Field(
        default=None,
        description="JSONL corpus ({id,title?,text} or Search-R1 {id,contents}) that citations "
        "may name; indexed once and cached by content hash (its content, not its path, keys "
        "the verdict cache). Tasks may instead carry their own docs (reference.docs or "
        "metadata.docs).",
    )
    cache_dir: str | None = Field(
        default=None, description="Where corpus indexes are cached; default .rlv-bm25/ beside it."
    )
    backend: Literal["auto", "bm25s", "rank_bm25"] = Field(
        default="auto", description="BM25 backend for the corpus index (same scores either way)."
    )
    answer_pattern: Regex | None = Field(
        default=None,
        description="Regex whose first group is the answer; invalid when it does not match. "
        "Default: the whole completion with citation markers removed.",
    )
    answer_match: Literal["exact", "f1"] = Field(
        default="exact", description="exact: SQuAD exact match; f1: SQuAD token F1."
    )
    citation_pattern: Regex | None = Field(
        default=None,
        description="Extra citation regex whose first group (or whole match) is a document id; "
        "read besides [d1], [1] and [doc:ID].",
    )
    max_completion_chars: int = Field(
        default=MAX_COMPLETION_CHARS,
        ge=1,
        description="Longest completion judged; a longer one scores 0 (info.limit names this "
        "setting) before any pattern or citation parsing runs over it.",
    )
    max_citations: int = Field(
        default=10,
        ge=1,
        description="Distinct citations that can earn credit; more still count against "
        "precision and hallucinated share.",
    )
    support_check: Literal["contains", "bm25_overlap"] = Field(
        default="contains",
        description="Without reference.support: a cited doc supports when it contains a gold "
        "answer (contains) or enough of its idf-weighted tokens (bm25_overlap).",
    )
    overlap_threshold: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Share needed by support_check=bm25_overlap."
    )
    entailment: str | None = Field(
        default=None,
        description="'module:function(doc_text, answer_sentence) -> bool' deciding support "
        "when no reference.support is given; overrides support_check. Verdicts are then "
        "not cached (the hook is code the cache cannot key).",
    )
    answer_weight: float = Field(default=0.6, ge=0.0, description="Weight of answer correctness.")
    citation_weight: float = Field(default=0.4, ge=0.0, description="Weight of citation F1.")
    hallucination_penalty: float = Field(
        default=0.5, ge=0.0, description="Penalty per unit of hallucinated-citation share."
    )


class ReferenceProblem(ValueError):
    """The task's reference cannot be used: a task problem, not the model's."""


class RetrievalVerifier(Verifier[RetrievalConfig]):
    """Answer correctness plus citation precision/recall against a corpus or inline docs."""

    name = "retrieval"
    description = (
        "Reward 0.6·answer + 0.4·citation F1 − 0.5·hallucinated-citation share, in [0, 1]; "
        "citations [d1], [1], [doc:ID] checked against reference.support or doc content."
    )
    reward_range = (0.0, 1.0)
    deterministic = True
    default_timeout_s = 10.0

    def __init__(self, config: VerifierConfig | Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        s = self.config
        self.answer_re = re.compile(s.answer_pattern, re.DOTALL) if s.answer_pattern else None
        self.citation_re = re.compile(s.citation_pattern) if s.citation_pattern else None
        self.weights = Weights(s.answer_weight, s.citation_weight, s.hallucination_penalty)
        self.index: BM25Index | None = None
        self.entails: Entailment | None = None

    def cache_inputs(self) -> dict[str, str] | None:
        """The corpus's content; ``None`` (never cached) with an entailment hook, whose
        module and whatever it loads (a model's weights) can change under the same name."""
        return None if self.config.entailment is not None else super().cache_inputs()

    async def open(self) -> None:
        self.prepare()

    def prepare(self) -> None:
        """Load the corpus index and entailment hook (once)."""
        s = self.config
        if s.corpus is not None and self.index is None:
            cache = Path(s.cache_dir) if s.cache_dir else None
            from rl_verifier_retrieval.cache import open_corpus_index

            self.index = open_corpus_index(Path(s.corpus), cache, s.backend)
        if s.entailment is not None and self.entails is None:
            self.entails = load_entailment(s.entailment)

    def verify(self, task: Task, completion: Completion) -> Verdict:
        self.prepare()
        try:
            golds, support, docs = read_reference(task)
        except ReferenceProblem as exc:
            return Verdict.errored(f"task {task.id}: {exc}")
        text = completion.text()
        if len(text) > self.config.max_completion_chars:
            return too_long(len(text), self.config.max_completion_chars)
        if not text.strip():
            return Verdict.invalid("empty output")
        answer = self.extract_answer(text)
        if answer is None:
            return Verdict.invalid("no answer matching answer_pattern")
        if not answer.strip():
            return Verdict.invalid("no answer besides citations")
        return self.judge(text, answer, golds, support, docs)

    def extract_answer(self, text: str) -> str | None:
        span = text
        if self.answer_re is not None:
            match = self.answer_re.search(text)
            if match is None:
                return None
            span = match.group(1) if self.answer_re.groups else match.group(0)
        return strip_citations(span, self.citation_re)

    def judge(
        self,
        text: str,
        answer: str,
        golds: list[str],
        support: set[str] | None,
        docs: list[Document],
    ) -> Verdict:
        s = self.config
        match = exact_match if s.answer_match == "exact" else token_f1
        correct = match(answer, golds)
        local = {doc.id: doc for doc in docs}
        cited = parse_citations(text, [doc.id for doc in docs], self.citation_re)
        lookup = self.lookup(local)
        supports = self.support_rule(answer, golds, docs)
        scores = citation_scores(
            cited.ids,
            s.max_citations,
            exists=lambda doc_id: lookup(doc_id) is not None,
            supports=lambda doc_id: supports(lookup(doc_id)),
            support=support,
        )
        reward = self.weights.reward(correct, scores.f1, scores.hallucinated_share)
        components = {
            "answer": correct,
            "citation_precision": scores.precision,
            "citation_recall": scores.recall,
            "citation_f1": scores.f1,
            "hallucinated_share": scores.hallucinated_share,
        }
        return Verdict.ok(
            reward,
            components,
            answer=" ".join(answer.split())[:200],
            cited=list(cited.ids[:50]),
            citations=len(cited.ids),
            over_cap=max(0, len(cited.ids) - s.max_citations),
        )

    def lookup(self, local: dict[str, Document]) -> Callable[[str], Document | None]:
        index = self.index

        def find(doc_id: str) -> Document | None:
            doc = local.get(doc_id)
            if doc is None and index is not None:
                doc = index.get(doc_id)
            return doc

        return find

    def support_rule(
        self, answer: str, golds: list[str], pool: list[Document]
    ) -> Callable[[Document | None], bool]:
        entails, s = self.entails, self.config

        def supports(doc: Document | None) -> bool:
            if doc is None:
                return False
            if entails is not None:
                return bool(entails(doc.indexed_text, " ".join(answer.split())))
            if s.support_check == "bm25_overlap":
                return overlap_support(doc, golds, pool or [doc], s.overlap_threshold)
            return contains_answer(doc, golds)

        return supports


COMPONENTS = ("answer", "citation_precision", "citation_recall", "citation_f1")


def too_long(length: int, limit: int) -> Verdict:
    """Reward 0 for a completion past ``max_completion_chars``: the model's failure."""
    components = dict.fromkeys(COMPONENTS, 0.0) | {"hallucinated_share": 0.0}
    return Verdict.ok(
        0.0,
        components,
        limit="max_completion_chars",
        detail=f"completion of {length} characters is longer than max_completion_chars ({limit})",
    )


def read_reference(task: Task) -> tuple[list[str], set[str] | None, list[Document]]:
    """Gold answers, the support set (None when not given) and the task's own docs."""
    ref = task.reference
    golds = ref.get("answers", ref.get("answer"))
    if isinstance(golds, str):
        golds = [golds]
    if not isinstance(golds, list) or not golds or not all(isinstance(g, str) for g in golds):
        raise ReferenceProblem("reference.answers must be a non-empty list of strings")
    support = ref.get("support")
    if support is not None and (
        not isinstance(support, list) or not all(isinstance(d, str | int) for d in support)
    ):
        raise ReferenceProblem("reference.support must be a list of document ids")
    rows = ref.get("docs", task.metadata.get("docs", []))
    if not isinstance(rows, list):
        raise ReferenceProblem("docs must be a list")
    try:
        docs = inline_documents(rows, "docs")
    except UserError as exc:
        raise ReferenceProblem(str(exc)) from None
    support_ids = {support_id(d, docs) for d in support} if support else None
    return golds, support_ids, docs


def support_id(entry: str | int, docs: Sequence[Document]) -> str:
    """A support entry as a doc id: an int (ALCE) is 1-indexed into the task's docs."""
    if isinstance(entry, int) and 1 <= entry <= len(docs):
        return docs[entry - 1].id
    return str(entry)
