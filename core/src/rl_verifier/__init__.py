"""rl-verifier: plugin-based verifiers that turn checks into RL rewards.

The names below are the public API: plugins and programs import from here (and from
``rl_verifier.testing`` for tests, ``rl_verifier.train`` for training environments,
``rl_verifier.cli_support`` for commands added to ``rlv``). The modules behind them are
private and may change.
"""

from rl_verifier.answers import normalise_answer, reference_answers
from rl_verifier.atomic import publish_directory, replace_directory, write_text
from rl_verifier.contracts import (
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
from rl_verifier.engine import BatchResult, Sample, make_executor, score_batch
from rl_verifier.errors import UserError
from rl_verifier.executors import Executor, InlineExecutor, ProcessExecutor
from rl_verifier.extensions import EnvironmentFactory, Preset, RewardProtocol, SandboxBackend
from rl_verifier.hookspecs import (
    EnvironmentRegistrar,
    LossRegistrar,
    PresetRegistrar,
    RewardProtocolRegistrar,
    SandboxBackendRegistrar,
    TaskSetRegistrar,
    VerifierRegistrar,
    hookimpl,
)
from rl_verifier.losses import Loss
from rl_verifier.losses import register_loss as register_loss  # deprecated: register_losses
from rl_verifier.piped import PipedProcess
from rl_verifier.python_source import parse_python
from rl_verifier.registry import Entry, Registry, unknown_message
from rl_verifier.resolve import reward_for
from rl_verifier.reward import Reward
from rl_verifier.scorer import CompletionLike, Scorer, TaskLike
from rl_verifier.text import after_reasoning
from rl_verifier.toolcalls import (
    OPEN_TAG,
    UNTERMINATED,
    CallSyntaxError,
    ToolCall,
    bracketed,
    message_tool_calls,
    openai_tool_calls,
    parse_bfcl_json_calls,
    parse_python_calls,
    parse_tool_calls,
    strip_tool_calls,
    tagged_tool_calls,
)
from rl_verifier.verifier import Regex, Verifier, VerifierConfig

__version__ = "0.1.0"

__all__ = [
    "OPEN_TAG",
    "UNTERMINATED",
    "BatchResult",
    "CallSyntaxError",
    "ChatMessage",
    "Completion",
    "CompletionLike",
    "Entry",
    "EnvironmentFactory",
    "EnvironmentRegistrar",
    "Executor",
    "InlineExecutor",
    "Loss",
    "LossRegistrar",
    "PipedProcess",
    "Preset",
    "PresetRegistrar",
    "ProcessExecutor",
    "Regex",
    "Registry",
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
    "Verifier",
    "VerifierConfig",
    "VerifierRef",
    "VerifierRegistrar",
    "__version__",
    "after_reasoning",
    "bracketed",
    "completion_text",
    "content_text",
    "hookimpl",
    "make_executor",
    "message_tool_calls",
    "normalise_answer",
    "openai_tool_calls",
    "parse_bfcl_json_calls",
    "parse_python",
    "parse_python_calls",
    "parse_tool_calls",
    "publish_directory",
    "reference_answers",
    "replace_directory",
    "reward_for",
    "score_batch",
    "strip_tool_calls",
    "tagged_tool_calls",
    "unknown_message",
    "write_text",
]
