"""LLM-as-judge verifiers for rl-verifier: rubric scores, group ranking and pairwise
preference from any OpenAI-compatible endpoint, with honest failures."""

from rl_verifier_judge.client import JudgeClient
from rl_verifier_judge.pairwise import JudgePairVerifier, PairConfig
from rl_verifier_judge.parsing import ParseProblem, parse_label_scores, parse_score, parse_winner
from rl_verifier_judge.pointwise import JudgeConfig, JudgeVerifier
from rl_verifier_judge.prompts import RUBRICS, as_data
from rl_verifier_judge.ranking import JudgeRankVerifier, RankConfig
from rl_verifier_judge.replies import JudgeFailure, Usage
from rl_verifier_judge.settings import JudgeSettings

__version__ = "0.1.0"

__all__ = [
    "RUBRICS",
    "JudgeClient",
    "JudgeConfig",
    "JudgeFailure",
    "JudgePairVerifier",
    "JudgeRankVerifier",
    "JudgeSettings",
    "JudgeVerifier",
    "PairConfig",
    "ParseProblem",
    "RankConfig",
    "Usage",
    "__version__",
    "as_data",
    "parse_label_scores",
    "parse_score",
    "parse_winner",
]
