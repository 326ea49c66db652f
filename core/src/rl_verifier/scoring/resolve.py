"""From names to runnable objects: reward specs, task sources and environments.

``rlv verify``, ``rlv train`` and ``rlv new`` all go through here, so a name means the
same thing, and fails with the same message, wherever a user writes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rl_verifier.base.contracts import TASKSET_PREFIX, Task
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward, build_reward, parse_expression
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.files.jsonl import Parsed, display, index_tasks, load_tasks

SPLITS = ("train", "test")  # taskset:NAME:train, taskset:NAME:test
TEST_PERCENT = 20


def spec_names(spec: str) -> list[str]:
    """The verifiers a reward spec names, in order of first mention."""
    names = list(dict.fromkeys(f for term in parse_expression(spec) for f in term.factors))
    if not names:
        raise UserError(f"reward spec '{spec}' names no verifier")
    return names


def reward_for(spec: str, settings: Mapping[str, Any] | None = None) -> Reward:
    """The reward of ``spec`` with its settings (for a composite: by verifier name)."""
    return build_reward(spec, get_plugins().registry, settings)


class RewardResolver:
    """The reward for a task: the one ``spec`` for every task, or else the task's own
    ``verifier`` with ``settings[verifier]``. Each distinct reward is built once."""

    def __init__(self, spec: str | None, settings: Mapping[str, Any], source: str = "") -> None:
        self.spec = spec or None
        self.settings = dict(settings)
        self.source = source
        self.built: dict[str, Reward] = {}

    def __call__(self, task: Task) -> Reward:
        spec = self.spec or task.verifier
        if not spec:
            where = f"{display(self.source)}: " if self.source else ""
            raise UserError(
                f"{where}task '{task.id}' names no verifier; give a reward spec "
                "(rlv verify --verifier, or reward in a training config)"
            )
        if spec not in self.built:
            settings = self.settings if self.spec else self.settings.get(spec, {})
            self.built[spec] = reward_for(spec, settings)
        return self.built[spec]

    def check_settings_used(self) -> None:
        """Without one spec, settings are by verifier: refuse those for unused verifiers."""
        if self.spec:
            return
        unused = sorted(set(self.settings) - set(self.built))
        if unused:
            raise UserError(
                f"config for '{unused[0]}' given, but the tasks use only: "
                f"{', '.join(sorted(self.built))} (settings go under each verifier's name)"
            )


def load_task_source(source: str) -> dict[str, Task]:
    """Tasks by id from ``taskset:NAME`` (``taskset:NAME:train``/``:test``: its split), a
    JSONL path, or ``-`` (standard input)."""
    if not source.startswith(TASKSET_PREFIX):
        return load_tasks(Path(source))
    name, split = split_name(source.removeprefix(TASKSET_PREFIX))
    tasks = [t for t in task_set(name)() if split is None or split_of(t.id) == split]
    return index_tasks((Parsed(n, task) for n, task in enumerate(tasks, start=1)), source)


def split_name(name: str) -> tuple[str, str | None]:
    """``NAME:train`` or ``NAME:test`` as (NAME, split); a plain name has no split."""
    base, _, split = name.rpartition(":")
    return (base, split) if base and split in SPLITS else (name, None)


def split_of(task_id: str) -> str:
    """``test`` for a fixed fifth of task ids (by a hash of the id alone), else ``train``:
    the same task is on the same side in every run, whatever the order or the set's size."""
    bucket = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:4], "big") % 100
    return "test" if bucket < TEST_PERCENT else "train"


def check_task_source(source: str) -> None:
    """Refuse a task source that cannot load, without loading it."""
    if source.startswith(TASKSET_PREFIX):
        task_set(split_name(source.removeprefix(TASKSET_PREFIX))[0])
        return
    path = Path(source)
    if not path.exists():
        raise UserError(f"tasks file '{source}' does not exist")
    if not path.is_file():
        raise UserError(f"tasks file '{source}' is not a file")


def task_set(name: str) -> Any:
    """The loader of a registered task set."""
    return get_plugins().task_sets.value(name)


def example_task_set(names: list[str]) -> str | None:
    """``taskset:NAME-example`` for the first verifier that registers one."""
    task_sets = get_plugins().task_sets
    for name in names:
        if f"{name}-example" in task_sets:
            return f"{TASKSET_PREFIX}{name}-example"
    return None


def environment(name: str, config: Any) -> Any:
    """A registered training environment, built for ``config`` (its ``environment_config``
    validated against the environment's settings)."""
    return get_plugins().environments.value(name)(config)


def check_environment(name: str, config: Any = None) -> None:
    """Refuse an unknown environment, and (given the run's config) settings it does not
    take, without building it."""
    factory = get_plugins().environments.value(name)
    if config is not None:
        factory.settings_for(config)
