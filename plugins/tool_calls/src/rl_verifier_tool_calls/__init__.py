"""Tool-call verifier for rl-verifier: legality, citations, thrift and BFCL AST checks."""

from rl_verifier import ToolCall as Call
from rl_verifier_tool_calls.config import ToolCallsConfig, Weights
from rl_verifier_tool_calls.trajectory import Trajectory, read_trajectory
from rl_verifier_tool_calls.verifier import ToolCallsVerifier

__version__ = "0.1.0"

__all__ = [
    "Call",
    "ToolCallsConfig",
    "ToolCallsVerifier",
    "Trajectory",
    "Weights",
    "__version__",
    "read_trajectory",
]
