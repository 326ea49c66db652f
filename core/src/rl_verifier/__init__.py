"""rl-verifier: plugin-based verifiers that turn checks into RL rewards."""

from rl_verifier.contracts import Completion, Score, Status, Task, Verdict
from rl_verifier.hookspecs import (
    EnvironmentRegistrar,
    TaskSetRegistrar,
    VerifierRegistrar,
    hookimpl,
)
from rl_verifier.toolcalls import (
    CallSyntaxError,
    ToolCall,
    message_tool_calls,
    parse_bfcl_json_calls,
    parse_python_calls,
    parse_tool_calls,
)
from rl_verifier.verifier import Verifier, VerifierConfig

__version__ = "0.1.0"

__all__ = [
    "CallSyntaxError",
    "Completion",
    "EnvironmentRegistrar",
    "Score",
    "Status",
    "Task",
    "TaskSetRegistrar",
    "ToolCall",
    "Verdict",
    "Verifier",
    "VerifierConfig",
    "VerifierRegistrar",
    "__version__",
    "hookimpl",
    "message_tool_calls",
    "parse_bfcl_json_calls",
    "parse_python_calls",
    "parse_tool_calls",
]
