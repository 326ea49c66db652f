"""Settings of the ``lean`` verifier."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import Field, model_validator

from rl_verifier import VerifierConfig
from rl_verifier_lean.judge import NEVER_AXIOMS
from rl_verifier_lean.screen import (
    DEFAULT_ALLOWED_ATTRIBUTES,
    DEFAULT_ALLOWED_COMMANDS,
    DEFAULT_BANNED,
)
from rl_verifier_sandbox import BackendChoice

DEFAULT_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
# auto, each sandbox backend that holds asyncio processes (bwrap), or none
SANDBOX_CHOICE = BackendChoice(after=("none",), async_processes=True)
# Longest Lean block checked (characters): the screen is linear in it, Lean's elaboration is
# not bounded by anything but the deadline; proofs are far shorter (miniF2F-style: < 10,000).
MAX_PROOF_CHARS = 50_000


class LeanConfig(VerifierConfig):
    mode: Literal["auto", "proof", "full_file"] = Field(
        default="auto",
        description="proof: the completion is what follows ':='; full_file: a whole file "
        "restating the theorem; auto: full_file when the block has a theorem keyword.",
    )
    backend: Literal["repl", "file"] = Field(
        default="repl", description="repl: pooled Lean REPL; file: `lake env lean --json`."
    )
    repl_command: list[str] | None = Field(
        default=None,
        description="Command starting the REPL ('python' first = this interpreter, or the "
        "sandbox's); default: the REPL built in `project`, else $RLV_LEAN_REPL, else the REPL "
        "built in $RLV_LEAN_PROJECT, else `repl` on PATH.",
    )
    project: str | None = Field(
        default=None, description="Lake project with Mathlib and the REPL (env RLV_LEAN_PROJECT)."
    )
    sandbox: Annotated[str, SANDBOX_CHOICE] = Field(
        default="auto",
        description="auto: bubblewrap when it works here, else unsandboxed with a warning; "
        "bwrap: required (samples are 'error' without it); none: plain subprocesses.",
    )
    sandbox_paths: list[str] = Field(
        default_factory=list,
        description="Extra host paths Lean must read inside the sandbox (shown read-only).",
    )
    banned: list[str] = Field(
        default_factory=lambda: list(DEFAULT_BANNED),
        description="Tokens the static screen rejects before Lean runs (whole tokens, "
        "outside comments and strings).",
    )
    allowed_commands: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_COMMANDS),
        description="Command kinds a full-file answer may use (a proof may use none); any "
        "other command keyword is rejected before Lean.",
    )
    allowed_attributes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_ATTRIBUTES),
        description="Attributes (@[...]) an answer may put on its declarations.",
    )
    max_proof_chars: int = Field(
        default=MAX_PROOF_CHARS,
        ge=1,
        description="Longest Lean block checked; a longer one scores 0 (info.limit names this "
        "setting) before the screen or Lean see it.",
    )
    static_screen: bool = Field(
        default=True, description="Screen answers before Lean (allow-list and banned tokens)."
    )
    allowed_axioms: list[str] = Field(
        default_factory=lambda: list(DEFAULT_AXIOMS),
        description="Axioms a proof may depend on (#print axioms); any other fails it.",
    )
    pool_size: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        ge=1,
        description="Lean REPL processes kept warm per verifier [default: one per core].",
    )
    max_uses: int = Field(default=200, ge=1, description="Recycle a REPL after this many proofs.")
    memory_mb: int = Field(
        default=8192,
        ge=64,
        description="Memory cap of each Lean process beyond the mapped .olean files "
        "(resident memory of its cgroup in the sandbox where the host allows, else RLIMIT_AS).",
    )
    max_rss_mb: int | None = Field(
        default=None, ge=64, description="Recycle a REPL whose resident memory exceeds this."
    )
    proof_timeout_s: float = Field(default=60.0, gt=0, description="Deadline of one proof.")
    header_timeout_s: float = Field(default=600.0, gt=0, description="Deadline of the header.")
    replay: bool | None = Field(
        default=None,
        description="Kernel replay (backend 'file'): compile the answer to .olean and re-check "
        "its constants in a fresh process [default: on with backend 'file', off with 'repl'].",
    )
    replay_command: list[str] | None = Field(
        default=None,
        description="Checker taking a module name (lean4checker's interface) [default: "
        "leanchecker from the toolchain, else lean4checker built in the project or on PATH].",
    )

    @model_validator(mode="after")
    def _check(self) -> LeanConfig:
        if self.replay and self.backend != "file":
            raise ValueError("replay=true needs backend='file' (the REPL writes no .olean)")
        if never := sorted(set(self.allowed_axioms) & NEVER_AXIOMS):
            raise ValueError(f"allowed_axioms may not list {', '.join(never)}: never a proof")
        return self

    @property
    def replay_on(self) -> bool:
        return self.backend == "file" if self.replay is None else self.replay

    def project_dir(self) -> str | None:
        return self.project or os.environ.get("RLV_LEAN_PROJECT") or None
