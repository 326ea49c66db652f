"""The ``pytest`` verifier: run model-written Python against hidden tests in a sandbox.

Statuses: ``invalid`` when the completion holds no code; ``error`` when the sandbox or
the trusted harness fails (never read as a wrong answer); otherwise ``ok``. A solution
that runs past its deadline (or crashes, or exhausts a limit) has simply failed its
tests: status ``ok``, reward 0, ``info.timed_out`` set. The policy wrote the slow code,
so it is the policy's failure, and dropping such samples would hide it from training.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from rl_verifier import Completion, Task, Verdict, Verifier, VerifierConfig, parse_python
from rl_verifier_pytest import hardened
from rl_verifier_pytest.config import PytestConfig
from rl_verifier_pytest.duplex import (
    HARNESS_SCRIPTS,
    WARM_SCRIPTS,
    WARM_STDLIB,
    CheckTask,
    Spawner,
    run_duplex,
)
from rl_verifier_pytest.extract import extract_code
from rl_verifier_pytest.harness_files import HARNESS_DIR, mounted
from rl_verifier_pytest.pyfiles import run_pytest_file
from rl_verifier_pytest.reference import PytestTask, ReferenceError, StdioTask, read_reference
from rl_verifier_pytest.scoring import reward_of
from rl_verifier_pytest.stdio import run_cases
from rl_verifier_sandbox import (
    Limits,
    Sandbox,
    SandboxUnavailable,
    backend_names,
    get_python_pool,
    get_sandbox,
)

if TYPE_CHECKING:
    from rl_verifier_sandbox import PoolStats, PythonPool

LOG = logging.getLogger(__name__)
# What the opt-in single-process mode cannot stop (README, "What this mode cannot stop").
SINGLE_PROCESS_CAVEAT = (
    "the solution shares pytest's interpreter: code written against this harness (an import "
    "hook rewriting asserts, the reporter found through gc, a forged result line) can pass"
)


class PytestVerifier(Verifier[PytestConfig]):
    """Runs the completion's Python code against hidden tests in a sandbox."""

    name = "pytest"
    description = (
        "Runs the completion's last Python block in a sandbox against hidden tests: a pytest "
        "file or HumanEval check(candidate) (tests and solution in separate sandboxed "
        "processes, plain data between them) or stdin/stdout cases. Reward: all tests pass "
        "(or the share passed)."
    )
    reward_range = (0.0, 1.0)
    deterministic = True
    needs_sandbox = True
    default_timeout_s = 60.0
    max_concurrency = 2 * (os.cpu_count() or 1)

    def __init__(self, config: VerifierConfig | dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self._sandbox: Sandbox | None = None
        self._pool: PythonPool | None = None
        self._lock = threading.Lock()
        self._bad_tasks: set[str] = set()
        self._pool_stats: PoolStats | None = None

    @property
    def limits(self) -> Limits:
        """One run's limits. Its wall clock never outlasts the sample's own deadline, so a
        slow program is the program's failure (``ok`` 0, ``limit``), never a ``timeout``."""
        wall = min(self.config.run_timeout_s, self.sample_budget_s)
        return Limits(wall_s=wall, cpu_s=wall, memory_bytes=self.config.memory_mb << 20)

    def sandbox(self) -> Sandbox:
        """The sandbox, started on first use; raises ``SandboxUnavailable``."""
        with self._lock:
            if self._sandbox is None:
                # The sandbox's uid slots are locked across processes, so scoring
                # workers never share a uid (limits and cleanup are per uid).
                self._sandbox = get_sandbox(self.config.backend, image=self.config.docker_image)
            return self._sandbox

    def spawner(self, sandbox: Sandbox) -> Spawner:
        """How the two-process mode starts its processes: forked by warm sandboxed servers
        (``warm_processes`` on bwrap; one server per process of a conversation, so up to twice
        ``max_concurrency``), else a fresh sandboxed process each."""
        if not self.config.warm_processes or sandbox.name != "bwrap":
            return sandbox.open_process
        with self._lock:
            if self._pool is None:
                self._pool = get_python_pool(
                    size=0,
                    tmp_bytes=Limits().tmp_bytes,
                    max_size=2 * (self.concurrency or os.cpu_count() or 1),
                    readonly_files=mounted(*HARNESS_SCRIPTS),
                    warm=(*WARM_STDLIB, *(f"{HARNESS_DIR}/{name}" for name in WARM_SCRIPTS)),
                )
                self._pool_stats = self._pool.stats
            return self._pool.open_process

    @property
    def pool_stats(self) -> PoolStats | None:
        """The warm servers' counts (start-ups, jobs, CPU) of the last pool this verifier
        opened, kept after ``close``; None before any."""
        return self._pool_stats

    async def open(self) -> None:
        with contextlib.suppress(SandboxUnavailable):  # reported per sample as status error
            self.sandbox()

    async def close(self) -> None:
        with self._lock:
            sandbox, self._sandbox = self._sandbox, None
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        if sandbox is not None:
            sandbox.close()

    def verify(self, task: Task, completion: Completion) -> Verdict:
        try:
            spec = read_reference(task.reference)
        except ReferenceError as exc:
            return self._bad_task(task, exc)
        settings = self.config
        code = extract_code(completion.text(), settings.code_block, settings.allow_unfenced)
        if code is None:
            return Verdict.invalid("no Python code block in the completion")
        try:
            sandbox = self.sandbox()
            if isinstance(spec, CheckTask):
                return self._check(spec, code, sandbox)
            if isinstance(spec, PytestTask):
                return self._pytest(spec, code, sandbox)
            return self._stdio(spec, code, sandbox)
        except SandboxUnavailable as exc:
            return Verdict.errored(f"sandbox unavailable: {exc}")

    def _bad_task(self, task: Task, exc: ReferenceError) -> Verdict:
        """``error`` for every sample of a task whose reference is unusable (never scored as a
        wrong answer), and one warning per task, not one per sample."""
        message = f"bad task {task.id!r}: {exc}"
        with self._lock:
            first = task.id not in self._bad_tasks
            self._bad_tasks.add(task.id)
        if first:
            LOG.warning("%s (every sample of it is scored as an error)", message)
        return Verdict.errored(message, bad_task=True)

    def _verdict(
        self,
        mode: str,
        results: list[bool],
        expected: int,
        timed_out: bool,
        limit: str | None = None,
        **info: Any,
    ) -> Verdict:
        """``ok`` with the reward; ``limit`` names the limit the solution ran into (``wall``,
        ``cpu``, ``memory``, ...), which is its failure, never a ``timeout``."""
        reward = reward_of(results, expected, self.config.reward)
        if limit is None and timed_out:
            limit = "wall"
        if limit:
            info["limit"] = limit
        return Verdict.ok(
            reward,
            mode=mode,
            tests=max(len(results), expected),
            passed=sum(results),
            timed_out=timed_out,
            **info,
        )

    @property
    def channel_budget_s(self) -> float:
        """How long a HumanEval conversation may last: the run's wall limit, within the
        sample's own deadline."""
        return min(self.config.run_timeout_s, self.sample_budget_s)

    @property
    def sample_budget_s(self) -> float:
        """The sample's own deadline less the time to start and end the processes."""
        return max(self.timeout_s - 5.0, self.timeout_s / 2)

    @staticmethod
    def _need_live_processes(sandbox: Sandbox) -> None:
        live = backend_names(processes=True)
        if sandbox.name not in live:
            need = f"the two-process mode needs {' or '.join(live)}"
            raise SandboxUnavailable(f"{need}, not {sandbox.name}")

    def _check(self, spec: CheckTask, code: str, sandbox: Sandbox) -> Verdict:
        self._need_live_processes(sandbox)
        if spec.prompt and not defines(code, spec.entry_point):
            code = spec.prompt + code
        exchange, stderr = run_duplex(
            spec,
            code,
            self.limits,
            split=self.config.reward == "fraction",
            stop_on_failure=self.config.reward == "all_or_nothing",
            spawner=self.spawner(sandbox),
            budget_s=self.channel_budget_s,
        )
        if exchange.results is None:
            if exchange.timed_out:
                return self._verdict("two-process", [], 1, True, calls=exchange.calls)
            return Verdict.errored(f"test harness failed: {exchange.note}", stderr=stderr[-500:])
        return self._verdict(
            "two-process", exchange.results, 1, exchange.timed_out, calls=exchange.calls
        )

    def _pytest(self, spec: PytestTask, code: str, sandbox: Sandbox) -> Verdict:
        if self.config.pytest_mode == "single-process":
            return self._single_process(spec, code, sandbox)
        self._need_live_processes(sandbox)
        exchange, stderr = run_pytest_file(
            spec,
            code,
            self.limits,
            budget_s=self.limits.wall_s,
            start_s=self.sample_budget_s,
            spawner=sandbox.open_process,
        )
        if exchange.results is None:
            if exchange.timed_out:
                return self._verdict("two-process", [], spec.expected, True, calls=exchange.calls)
            return Verdict.errored(f"test harness failed: {exchange.note}", stderr=stderr[-500:])
        return self._verdict(
            "two-process", exchange.results, spec.expected, exchange.timed_out, calls=exchange.calls
        )

    def _single_process(self, spec: PytestTask, code: str, sandbox: Sandbox) -> Verdict:
        run = hardened.new_run()
        job = hardened.build_job(spec, code, run, self.limits, self.config.guard_returns)
        result = sandbox.run(job)
        judgement = hardened.judge(spec, run, result)
        notes = judgement.notes
        if judgement.results is None:
            if judgement.ready or result.timed_out:
                return self._verdict(
                    "hardened",
                    [],
                    spec.expected,
                    result.timed_out,
                    result.limit_hit,
                    notes=notes,
                    cannot_stop=SINGLE_PROCESS_CAVEAT,
                )
            stderr = result.stderr.decode(errors="replace")[-500:]
            return Verdict.errored("pytest harness did not start", stderr=stderr)
        return self._verdict(
            "hardened",
            judgement.results,
            spec.expected,
            result.timed_out,
            result.limit_hit,
            tampered=judgement.tampered,
            notes=notes,
            cannot_stop=SINGLE_PROCESS_CAVEAT,
        )

    def _stdio(self, spec: StdioTask, code: str, sandbox: Sandbox) -> Verdict:
        stop = self.config.reward == "all_or_nothing"
        budget = self.sample_budget_s
        results, timed_out, limit = run_cases(spec, code, self.limits, sandbox.run, stop, budget)
        return self._verdict("stdio", results, len(spec.cases), timed_out, limit)


def defines(code: str, name: str) -> bool:
    """Whether ``code`` defines ``name`` at top level (a def, class or assignment)."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the sandbox says why
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
    return False
