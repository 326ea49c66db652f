"""Everything a run needs, checked before anything is created on disk or started.

``prepare`` loads the tasks, builds the reward of every task (unknown verifiers and bad
settings fail here), builds the environment, reads the warm-up examples and checks that
the base model is available to the chosen backend. A mistake costs one line and leaves
no run directory behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rl_verifier.base.contracts import Completion, Task, content_text
from rl_verifier.base.errors import UserError
from rl_verifier.files.jsonl import read_rows
from rl_verifier.scoring.resolve import RewardResolver, environment, load_task_source
from rl_verifier.train.backend import require_key
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.environments import Environment
from rl_verifier.train.local_models import check_local_model


@dataclass
class WarmupExample:
    """A scripted completion of a task: one reply, or the assistant turns of an episode."""

    task: Task
    replies: list[str]


@dataclass
class Plan:
    """A run's validated inputs."""

    tasks: list[Task]
    rewards: RewardResolver
    env: Environment
    warmup: list[WarmupExample]
    eval_tasks: list[Task] = field(default_factory=list)  # held out, with eval_every
    eval_rewards: RewardResolver | None = None


def prepare(config: TrainConfig, warm_start: bool = True) -> Plan:
    """Validate the whole config; ``warm_start``: the warm-up examples will be used."""
    check_model(config)
    tasks = load_tasks(config.tasks)
    rewards = RewardResolver(config.reward, config.verifier_config, config.tasks)
    for task in tasks:
        rewards(task)
    env: Environment = environment(config.environment, config)
    warmup = read_warmup(config, tasks) if warm_start and config.warmup_steps else []
    eval_tasks, eval_rewards = held_out(config)
    return Plan(tasks, rewards, env, warmup, eval_tasks, eval_rewards)


def held_out(config: TrainConfig) -> tuple[list[Task], RewardResolver | None]:
    """The held-out tasks and their rewards, all built now (none without eval_every)."""
    if not config.eval_every or not config.eval_tasks:
        return [], None
    tasks = list(load_task_source(config.eval_tasks).values())
    if not tasks:
        raise UserError(f"{config.eval_tasks}: no held-out tasks")
    rewards = RewardResolver(config.reward, config.verifier_config, config.eval_tasks)
    for task in tasks:
        rewards(task)
    return tasks, rewards


def check_model(config: TrainConfig) -> None:
    """tinker: an API key is set; local: the server is installed and offers the model."""
    if config.backend == "tinker":
        require_key(config)
    else:
        check_local_model(config.base_model)


def load_tasks(source: str) -> list[Task]:
    """The tasks of a JSONL path or ``taskset:NAME``, in order; none is an error."""
    tasks = list(load_task_source(source).values())
    if not tasks:
        raise UserError(f"{source}: no tasks")
    return tasks


def read_warmup(config: TrainConfig, tasks: list[Task]) -> list[WarmupExample]:
    """The warm-up rows, each joined to its task."""
    assert config.warmup_examples is not None  # TrainConfig requires it with warmup_steps
    path = Path(config.warmup_examples)
    by_id = {task.id: task for task in tasks}
    examples = []
    for number, row in read_rows(path, Completion):
        task = by_id.get(row.task_id)
        if task is None:
            raise UserError(f"{path}:{number}: task_id '{row.task_id}' is not a task of this run")
        examples.append(WarmupExample(task, scripted_replies(row)))
    if not examples:
        raise UserError(f"{path}: no warm-up examples")
    return examples


def scripted_replies(row: Completion) -> list[str]:
    """A warm-up row's assistant turns: a string is one; a chat gives each assistant message
    (other messages are left out: the run's environment answers the replies itself)."""
    if isinstance(row.completion, str):
        return [row.completion]
    replies = [content_text(m.content) for m in row.completion if m.role == "assistant"]
    return replies or [""]
