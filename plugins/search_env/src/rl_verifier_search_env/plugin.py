"""Entry point: the ``search_tools`` environment and the Fictopedia task sets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rl_verifier import EnvironmentRegistrar, TaskSetRegistrar, hookimpl

if TYPE_CHECKING:
    from rl_verifier.train import Environment, TrainConfig


@hookimpl
def register_environments(register: EnvironmentRegistrar) -> None:
    def search_tools(config: TrainConfig) -> Environment:
        from rl_verifier_search_env.env import make_env

        return make_env(config)

    register("search_tools", search_tools)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    from rl_verifier_search_env.fictopedia import example_tasks, fictopedia_tasks

    register("fictopedia", fictopedia_tasks)
    register("search-example", example_tasks)
