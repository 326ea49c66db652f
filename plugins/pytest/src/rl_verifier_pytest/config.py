"""Settings of the ``pytest`` verifier."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from rl_verifier import VerifierConfig
from rl_verifier_sandbox import BackendChoice

RewardRule = Literal["all_or_nothing", "fraction"]
PytestMode = Literal["two-process", "single-process"]


class PytestConfig(VerifierConfig):
    """Settings of the ``pytest`` verifier."""

    reward: RewardRule = Field(
        default="all_or_nothing",
        description="all_or_nothing: 1 only when every test passes; fraction: share of tests "
        "passed. Skipped, xfailed, errored and missing tests count as failed.",
    )
    code_block: Literal["last", "first"] = Field(
        default="last", description="Which fenced Python block of the completion is the program."
    )
    allow_unfenced: bool = Field(
        default=False,
        description="Accept a completion with no fence as code when the whole text parses.",
    )
    backend: Annotated[str, BackendChoice()] = Field(  # auto or any backend of the table
        default="bwrap",
        description="Sandbox backend. The two-process (HumanEval) mode needs bwrap or docker; "
        "'process' does not isolate anything and is for development only.",
    )
    docker_image: str | None = Field(
        default=None,
        description="Image of the docker backend [default: $RLV_SANDBOX_IMAGE, else the image "
        "`rlv sandbox image build` makes].",
    )
    run_timeout_s: float = Field(
        default=10.0, gt=0, description="Wall-clock limit of one sandboxed run."
    )
    memory_mb: int = Field(
        default=1024,
        ge=64,
        description="Memory limit of one run: resident memory where a cgroup enforces it "
        "(docker; bwrap as root), else address space.",
    )
    warm_processes: bool = Field(
        default=True,
        description="HumanEval (check) tasks on bwrap: fork each sample's test and solution "
        "processes from warm sandboxed servers (one fresh child per process, discarded after "
        "the sample; the server is wiped before its next child) instead of starting two fresh "
        "sandboxes per sample. Same uid, seccomp, cgroup and namespace rules either way.",
    )
    pytest_mode: PytestMode = Field(
        default="two-process",
        description="pytest-file tasks: two-process runs the tests in their own sandboxed "
        "interpreter against a proxy `solution` whose functions forward plain-data calls to the "
        "solution's process (nothing the solution does can reach pytest). single-process (opt-in, "
        "for tests that need real objects of the solution) shares one interpreter and cannot stop "
        "code written against the harness: import hooks rewriting asserts, the reporter found "
        "through gc, a forged result line.",
    )
    guard_returns: bool = Field(
        default=True,
        description="pytest-file tasks in single-process mode: the solution's public functions "
        "must return plain data (exact builtin types), so always-equal objects and int/str "
        "subclasses fail (two-process mode only ever passes plain data).",
    )
