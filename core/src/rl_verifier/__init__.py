"""rl-verifier: plugin-based verifiers that turn checks into RL rewards.

The names below are the public API: plugins and programs import from here (and from
``rl_verifier.testing`` for tests, ``rl_verifier.train`` for training environments,
``rl_verifier.cli_support`` for commands added to ``rlv``). The modules behind them are
private and may change; ``rl_verifier.internal`` holds what only this repository's own
packages share.
"""

import importlib
import warnings
from typing import Any

from rl_verifier.base.content import file_digest, files_digest
from rl_verifier.base.contracts import (
    ChatMessage,
    Completion,
    Score,
    Status,
    Task,
    Text,
    Verdict,
    VerifierRef,
    completion_text,
    content_text,
)
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.base.verifier import InputFile, Regex, Verifier, VerifierConfig
from rl_verifier.base.version import __version__
from rl_verifier.discovery.extensions import (
    EnvironmentFactory,
    Preset,
    RewardProtocol,
    SandboxBackend,
)
from rl_verifier.discovery.hookspecs import (
    EnvironmentRegistrar,
    LossRegistrar,
    PresetRegistrar,
    RewardProtocolRegistrar,
    SandboxBackendRegistrar,
    TaskSetRegistrar,
    VerifierRegistrar,
    hookimpl,
)
from rl_verifier.discovery.losses import Loss
from rl_verifier.discovery.losses import (
    register_loss as register_loss,  # deprecated: register_losses
)
from rl_verifier.execution.executors import Executor, InlineExecutor, ProcessExecutor
from rl_verifier.execution.piped import PipedProcess
from rl_verifier.files.atomic import publish_directory
from rl_verifier.parsing.answers import normalise_answer, reference_answers
from rl_verifier.parsing.python_source import parse_python
from rl_verifier.parsing.text import after_reasoning
from rl_verifier.parsing.toolcalls import ToolCall, parse_tool_calls
from rl_verifier.scoring.engine import BatchResult, Sample, make_executor, score_batch
from rl_verifier.scoring.resolve import reward_for
from rl_verifier.scoring.scorer import CompletionLike, Scorer, TaskLike
from rl_verifier.scoring.verdict_cache import DiskStore, VerdictCache


def __getattr__(name: str) -> Any:
    """The names moved to ``rl_verifier.internal`` (exported here before the public API
    was split by audience), still importable here with a warning."""
    # Not ``from rl_verifier import internal``: that asks this hook for ``internal`` first.
    internal = importlib.import_module("rl_verifier.internal")

    if name in internal.__all__:
        warnings.warn(
            f"rl_verifier.{name} is internal now: import it from rl_verifier.internal",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(internal, name)
    raise AttributeError(f"module 'rl_verifier' has no attribute {name!r}")


__all__ = [
    "BatchResult",
    "ChatMessage",
    "Completion",
    "CompletionLike",
    "DiskStore",
    "EnvironmentFactory",
    "EnvironmentRegistrar",
    "Executor",
    "InlineExecutor",
    "InputFile",
    "Loss",
    "LossRegistrar",
    "PipedProcess",
    "Preset",
    "PresetRegistrar",
    "ProcessExecutor",
    "Regex",
    "Reward",
    "RewardProtocol",
    "RewardProtocolRegistrar",
    "Sample",
    "SandboxBackend",
    "SandboxBackendRegistrar",
    "Score",
    "Scorer",
    "Status",
    "Task",
    "TaskLike",
    "TaskSetRegistrar",
    "Text",
    "ToolCall",
    "UserError",
    "Verdict",
    "VerdictCache",
    "Verifier",
    "VerifierConfig",
    "VerifierRef",
    "VerifierRegistrar",
    "__version__",
    "after_reasoning",
    "completion_text",
    "content_text",
    "file_digest",
    "files_digest",
    "hookimpl",
    "make_executor",
    "normalise_answer",
    "parse_python",
    "parse_tool_calls",
    "publish_directory",
    "reference_answers",
    "reward_for",
    "score_batch",
]
