"""The ``lean`` verifier: static screen, then the proof checked by Lean with an axiom audit."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rl_verifier import Completion, Status, Task, Verdict, Verifier, VerifierConfig
from rl_verifier_lean.candidate import Candidate, Rejected, build, choose_mode, strip_header_lines
from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.filecheck import FileTools, ReplayUnavailable, check_file
from rl_verifier_lean.isolation import LeanSetupError, choose_sandbox
from rl_verifier_lean.judge import Judgement, judge, summarise
from rl_verifier_lean.locate import LeanMissing, file_launch, repl_launch, replay_argv
from rl_verifier_lean.pool import ReplPool
from rl_verifier_lean.project_digest import project_digest
from rl_verifier_lean.repl import Repl, ReplDied
from rl_verifier_lean.runner import (
    CandidateTimeout,
    HeaderFailed,
    ProofTimeout,
    Responses,
    StatementFailed,
    check_in_pool,
    declared_names,
)
from rl_verifier_lean.screen import Rules, allowed, first_banned
from rl_verifier_lean.statement import BadReference, Statement, last_lean_block, parse_reference
from rl_verifier_sandbox import Sandbox


class LeanVerifier(Verifier[LeanConfig]):
    """Lean 4 proofs: reward 1 when Lean accepts the trusted theorem with allowed axioms."""

    name: ClassVar[str] = "lean"
    needs_sandbox: ClassVar[bool] = True
    default_timeout_s: ClassVar[float] = 120.0

    def __init__(self, config: VerifierConfig | dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self._pool: ReplPool | None = None
        self._file_backend: tuple[Sandbox | None, FileTools] | None = None

    def cache_inputs(self) -> dict[str, str] | None:
        """The Lake project's pins and sources (``project_digest``); ``None`` without a
        project, when nothing names the toolchain and library Lean checks against."""
        project = self.config.project_dir()
        if project is None:
            return None
        return {**(super().cache_inputs() or {}), "lean_project": project_digest(project)}

    # Lifecycle ------------------------------------------------------------------------

    def pool(self) -> ReplPool:
        if self._pool is None:
            cfg = self.config

            async def start() -> Repl:
                sandbox = choose_sandbox(cfg.sandbox)
                launch = repl_launch(cfg, sandboxed=sandbox is not None)
                return await Repl.start(launch, sandbox, cfg.memory_mb)

            self._pool = ReplPool(start, cfg.pool_size, cfg.max_uses, cfg.max_rss_mb)
        return self._pool

    def file_backend(self) -> tuple[Sandbox | None, FileTools]:
        """Where and how the per-file backend runs Lean (and the replay checker): decided once,
        not per proof."""
        if self._file_backend is None:
            cfg = self.config
            sandbox = choose_sandbox(cfg.sandbox)
            lean = file_launch(cfg)
            checker = replay_argv(cfg, lean) if cfg.replay_on else None
            self._file_backend = sandbox, FileTools(lean, checker)
        return self._file_backend

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    # Judgement ------------------------------------------------------------------------

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        try:
            statement = parse_reference(task.reference)
        except BadReference as exc:
            return Verdict.errored(f"bad task reference: {exc}")
        block = last_lean_block(completion.text())
        if block is None or not block.strip():
            return Verdict.invalid("no ```lean block in the completion")
        if len(block) > (limit := self.config.max_proof_chars):
            detail = f"the Lean block has {len(block)} characters, more than {limit}"
            return Verdict.ok(0.0, reason="too_long", limit="max_proof_chars", detail=detail)
        try:
            candidate = self.prepare(statement, block)
        except Rejected as exc:
            return Verdict.ok(0.0, reason=exc.reason, detail=exc.detail)
        return await self.check(statement, candidate)

    def prepare(self, statement: Statement, block: str) -> Candidate:
        """Static screen (deny-list, then the allow-list of command kinds) and statement
        handling; raises ``Rejected``. Both layers always apply; the deny-list's token is the
        more specific reason, so it is reported first."""
        cfg = self.config
        mode = choose_mode(block, cfg.mode)
        screened = strip_header_lines(block, statement.header) if mode == "full_file" else block
        if cfg.static_screen and (token := first_banned(screened, cfg.banned)):
            raise Rejected(f"banned:{token}", f"the completion uses '{token}'")
        candidate = build(statement, block, mode)
        rules = Rules.of(cfg.allowed_commands, cfg.allowed_attributes)
        if cfg.static_screen and (what := allowed(screened, mode, rules, statement.name)):
            raise Rejected(f"not_allowed:{what}", f"the completion uses {what}, not allowed")
        return candidate

    def _deadline(self) -> float:
        return min(self.config.proof_timeout_s, self.timeout_s * 0.9)

    async def check(self, statement: Statement, candidate: Candidate) -> Verdict:
        cfg = self.config
        try:
            if cfg.backend == "file":
                sandbox, tools = self.file_backend()
                responses = await check_file(
                    tools, sandbox, statement, candidate, self._deadline(), cfg.memory_mb
                )
            else:
                timeouts = (cfg.header_timeout_s, self._deadline())
                responses = await check_in_pool(self.pool(), statement, candidate, timeouts)
        except (LeanMissing, LeanSetupError) as exc:
            return Verdict.errored(str(exc))
        except CandidateTimeout as exc:  # the time went into the answer: the model's failure
            return Verdict.ok(0.0, reason="timeout", limit="proof_timeout_s", detail=str(exc))
        except (ProofTimeout, TimeoutError) as exc:
            return Verdict(status=Status.TIMEOUT, error=str(exc) or "Lean timed out")
        except (ReplDied, HeaderFailed, StatementFailed, ReplayUnavailable, OSError) as exc:
            return Verdict.errored(f"{type(exc).__name__}: {exc}")
        return self.verdict(responses, candidate)

    def verdict(self, responses: Responses, candidate: Candidate) -> Verdict:
        declared = declared_names(candidate.code)
        allowed = self.config.allowed_axioms
        result = judge(
            responses.candidate, responses.audit, candidate.audit_name, allowed, declared
        )
        info: dict[str, Any] = {"mode": candidate.mode, "axioms": result.axioms}
        if result.passed and responses.replay is not None:
            result = Judgement(False, "replay", f"kernel replay disagreed: {responses.replay}")
        if not result.passed:
            reason = result.reason
            if reason == "lean_error" and uses_earlier_name(result.detail, responses):
                reason = "isolation"  # relied on a declaration from another proof
            info.update(reason=reason, detail=result.detail)
            info["messages"] = summarise([responses.candidate, responses.audit])
        return Verdict.ok(1.0 if result.passed else 0.0, **scrub(info, candidate))


def uses_earlier_name(detail: str, responses: Responses) -> bool:
    """Lean's "unknown identifier 'x'" (Lean 4.2x: "Unknown identifier `x`")."""
    match = re.search(r"unknown (?:identifier|constant) ['`]([^'`]+)['`]", detail, re.I)
    return match is not None and match.group(1) in responses.earlier_names


def scrub(value: Any, candidate: Candidate) -> Any:
    """Replace the per-check nonce names, so equal checks give equal info."""
    if isinstance(value, str):
        shown = ("<candidate>", "<audit>", "<statement>")
        for name, placeholder in zip(candidate.names, shown, strict=True):
            value = value.replace(name, placeholder)
        return value
    if isinstance(value, list):
        return [scrub(v, candidate) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, candidate) for k, v in value.items()}
    return value
