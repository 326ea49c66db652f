"""``rlv train`` settings: a TOML file, overridden by ``--set key=value``, echoed to the run.

Relative paths in the file (an environment's ``Path`` settings included) are relative to
the file's own folder; those in ``--set`` to the current directory. Both are made absolute
on loading, so the echoed ``config.json`` (which ``--resume`` reads) names the same files
from any directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rl_verifier.base.contracts import task_set_name
from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.base.loss import BUILTIN_LOSSES
from rl_verifier.discovery.losses import loss_config_problem, policy_loss_problem
from rl_verifier.parsing.config_input import parse_pairs, read_config_file
from rl_verifier.scoring.engine import ExecutorKind

PATH_SETTINGS = ("tasks", "warmup_examples", "run_dir", "eval_tasks")
EXECUTOR_KINDS: tuple[str, ...] = get_args(ExecutorKind)


class TrainingBackend(StrEnum):
    """Where a run trains: ``local`` starts an embedded ``rlv serve``; ``tinker`` is the
    hosted API. (Not a sandbox backend, nor a retrieval index's BM25 backend.)"""

    LOCAL = "local"
    TINKER = "tinker"


class TrainConfig(BaseModel):
    """Everything a training run needs. Unknown keys are refused by name."""

    model_config = ConfigDict(extra="forbid")

    base_model: str = Field(default="rlv/tiny-chat", description="Base model to put LoRA on.")
    backend: TrainingBackend = Field(
        default=TrainingBackend.LOCAL, description="local: start rlv serve; tinker: the hosted API."
    )
    base_url: str | None = Field(default=None, description="Override the Tinker API address.")
    lora_rank: int = Field(default=32, ge=1)
    learning_rate: float = Field(default=4e-5, gt=0)
    steps: int = Field(default=50, ge=1)
    groups_per_step: int = Field(default=4, ge=1, description="Tasks per step.")
    group_size: int = Field(default=8, ge=1, description="Samples per task.")
    max_tokens: int = Field(default=256, ge=1)
    temperature: float = Field(default=1.0, ge=0)
    loss: str = Field(
        default="importance_sampling",
        description="Policy loss: "
        + ", ".join(loss.name for loss in BUILTIN_LOSSES if loss.policy)
        + " (or one a plugin registers).",
    )
    loss_config: dict[str, float] = Field(
        default_factory=dict,
        description="The loss's settings: "
        + "; ".join(
            f"{loss.name}: {', '.join(loss.config)}"
            for loss in BUILTIN_LOSSES
            if loss.policy and loss.config
        )
        + ".",
    )
    advantage: Literal["mean", "std", "loo"] = Field(
        default="mean",
        description="mean: centre on the group mean; std: also divide by the "
        "group's standard deviation; loo: leave-one-out baseline.",
    )
    skip_degenerate_groups: bool = Field(
        default=True, description="Skip groups whose rewards are all equal (no signal)."
    )
    reward: str = Field(
        default="", description="Reward spec as in rlv verify; empty: each task's own verifier."
    )
    verifier_config: dict[str, Any] = Field(
        default_factory=dict, description="Verifier settings, as --config in rlv verify."
    )
    tasks: str = Field(
        description="A tasks JSONL file (relative to the TOML's folder), or taskset:NAME."
    )
    environment: str = Field(default="single_turn", description="Registered environment.")
    environment_config: dict[str, Any] = Field(
        default_factory=dict,
        description="The environment's settings, checked against the model it registers.",
    )
    max_turns: int = Field(default=1, ge=1, description="Model turns per episode (tool use).")
    max_context: int = Field(
        default=4096, ge=1, description="Tokens an episode may span (prompt and all turns)."
    )
    renderer: Literal["auto"] = Field(
        default="auto", description="auto: the tokenizer's own chat template."
    )
    save_every: int = Field(default=10, ge=1, description="save_state every N steps.")
    run_dir: str = Field(
        default="runs/{time}",
        description="'{time}' is replaced at start; default: under the current directory.",
    )
    seed: int = 0
    sampling_ahead: int = Field(
        default=0, ge=0, description="Steps sampling may run ahead of training (0: on-policy)."
    )
    failed_scores: Literal["drop", "zero"] = Field(
        default="drop", description="timeout/error samples: drop them, or score them 0."
    )
    max_failed_share: float = Field(
        default=0.5, ge=0, le=1, description="Stop when a step's timeout/error share exceeds this."
    )
    warmup_examples: str | None = Field(
        default=None, description="JSONL of {task_id, completion} for a cross_entropy warm start."
    )
    warmup_steps: int = Field(default=0, ge=0)
    warmup_learning_rate: float | None = Field(default=None, gt=0)
    executor: ExecutorKind = "process"
    ray_address: str | None = Field(
        default=None, description="Ray cluster for executor='ray' (none: start one locally)."
    )
    workers: int | None = Field(default=None, ge=1)
    samples_logged_per_step: int = Field(default=4, ge=0)
    eval_every: int = Field(
        default=0, ge=0, description="Held-out eval every N steps, and before the first (0: off)."
    )
    eval_tasks: str | None = Field(
        default=None, description="Held-out tasks: a JSONL file or taskset:NAME (eval_every)."
    )
    eval_n: int = Field(default=4, ge=1, description="Held-out samples per task.")
    eval_k: list[int] = Field(default=[1], description="The k of the held-out pass@k.")
    eval_threshold: float = Field(
        default=1.0, description="A held-out sample succeeds when its reward is at least this."
    )
    baseline_reward: float | None = Field(
        default=None,
        description="A trivial policy's mean reward (always 0.5, an empty reply), drawn as a "
        "line on the report's reward plot; none: no line.",
    )
    baseline_label: str = Field(
        default="trivial baseline", description="The report's legend for baseline_reward."
    )

    @field_validator("loss")
    @classmethod
    def _known_policy_loss(cls, value: str) -> str:
        problem = policy_loss_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _loss_config_keys(self) -> TrainConfig:
        problem = loss_config_problem(self.loss, self.loss_config)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _warmup_needs_examples(self) -> TrainConfig:
        if self.warmup_steps and not self.warmup_examples:
            raise ValueError("warmup_steps needs warmup_examples")
        return self

    @model_validator(mode="after")
    def _eval_settings(self) -> TrainConfig:
        if self.eval_every and not self.eval_tasks:
            raise ValueError("eval_every needs eval_tasks")
        bad = [k for k in self.eval_k if not 1 <= k <= self.eval_n]
        if bad or not self.eval_k:
            raise ValueError(f"eval_k: each k must be between 1 and eval_n ({self.eval_n})")
        return self

    def with_absolute_paths(self, base: Path) -> TrainConfig:
        """This config with relative paths made absolute against ``base``."""
        return TrainConfig.model_validate(absolute_paths(self.model_dump(), base))


def load_config(path: Path | None, overrides: Iterable[str] = ()) -> TrainConfig:
    """Read ``path`` (TOML, or a run's echoed ``config.json``), apply ``key=value``
    overrides, validate. Paths come back absolute (see the module docstring)."""
    data = {}
    if path is not None:
        data = absolute_paths(read_config_file(path), Path(os.path.abspath(path)).parent)
    config = validate(data, overrides)
    return config.with_absolute_paths(Path.cwd())  # settings left at their defaults


def absolute_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """``data`` with its relative path settings made absolute against ``base``.

    ``taskset:NAME`` is a name, not a path. ``base_model`` is a path only when it names a
    model directory (one with ``config.json``) from ``base``, or starts with ``.``, ``/``
    or ``~``; otherwise it is a model name such as ``Qwen/Qwen3-8B``."""
    out = dict(data)
    for key in PATH_SETTINGS:
        value = out.get(key)
        if isinstance(value, str) and value and task_set_name(value) is None:
            out[key] = absolute(value, base)
    settings = out.get("environment_config")
    if isinstance(settings, dict) and settings:
        keys = environment_path_keys(str(out.get("environment", "single_turn")))
        is_path = {k for k, v in settings.items() if k in keys and isinstance(v, str) and v}
        out["environment_config"] = {
            key: absolute(value, base) if key in is_path else value
            for key, value in settings.items()
        }
    model = out.get("base_model")
    if isinstance(model, str) and model:
        looks_like_path = model.startswith((".", "/", "~"))
        if looks_like_path or (base / model / "config.json").is_file():
            out["base_model"] = absolute(model, base)
    return out


def environment_path_keys(environment: str) -> set[str]:
    """The settings of the registered ``environment`` that are paths (typed ``Path``)."""
    from rl_verifier.discovery.plugins import get_plugins

    registry = get_plugins().environments
    model = registry.value(environment).settings if environment in registry else None
    if model is None:
        return set()
    return {name for name, field in model.model_fields.items() if _is_path(field.annotation)}


def _is_path(annotation: Any) -> bool:
    return annotation is Path or any(_is_path(arg) for arg in get_args(annotation))


def absolute(value: str, base: Path) -> str:
    """``value`` as an absolute, normalised path (``~`` expanded)."""
    return os.path.normpath(base / Path(value).expanduser())


def validate(data: dict[str, Any], overrides: Iterable[str]) -> TrainConfig:
    for key, value in absolute_paths(parse_pairs(overrides), Path.cwd()).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, noun="setting")
        raise UserError("bad training config: " + "; ".join(problems)) from None
