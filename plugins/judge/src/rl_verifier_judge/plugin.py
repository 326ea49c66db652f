"""Entry point: registers the ``judge``, ``judge_rank`` and ``judge_pair`` verifiers."""

from __future__ import annotations

from rl_verifier import VerifierRegistrar, hookimpl
from rl_verifier_judge.pairwise import JudgePairVerifier
from rl_verifier_judge.pointwise import JudgeVerifier
from rl_verifier_judge.ranking import JudgeRankVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(JudgeVerifier)
    register(JudgeRankVerifier)
    register(JudgePairVerifier)
