"""Reading what models and users write: answers, reasoning, tool calls, Python source,
JSON from outside, verifier settings."""
