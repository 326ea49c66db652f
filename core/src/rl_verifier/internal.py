"""Names this repository's own packages share (the sandbox, the server, the plugins).

Not for third parties: these may change in any release. Plugin authors and trainer users
import from ``rl_verifier`` (see docs/python-api.md, "Every public name").
"""

from rl_verifier.base.registry import Entry, Registry, unknown_message
from rl_verifier.files.atomic import replace_directory, write_text
from rl_verifier.parsing.toolcalls import (
    OPEN_TAG,
    UNTERMINATED,
    CallSyntaxError,
    bracketed,
    message_tool_calls,
    openai_tool_calls,
    parse_bfcl_json_calls,
    parse_python_calls,
    strip_tool_calls,
    tagged_tool_calls,
)

__all__ = [
    "OPEN_TAG",
    "UNTERMINATED",
    "CallSyntaxError",
    "Entry",
    "Registry",
    "bracketed",
    "message_tool_calls",
    "openai_tool_calls",
    "parse_bfcl_json_calls",
    "parse_python_calls",
    "replace_directory",
    "strip_tool_calls",
    "tagged_tool_calls",
    "unknown_message",
    "write_text",
]
