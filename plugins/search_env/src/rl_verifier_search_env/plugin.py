"""Entry point: the ``search_tools`` environment and the Fictopedia task sets."""

from __future__ import annotations

from collections.abc import Callable

from rl_verifier.contracts import Task
from rl_verifier.hookspecs import hookimpl


@hookimpl
def register_environments(register: Callable[[str, Callable[..., object]], None]) -> None:
    def search_tools(config: object) -> object:
        from rl_verifier.train.config import TrainConfig
        from rl_verifier_search_env.env import make_env

        assert isinstance(config, TrainConfig)
        return make_env(config)

    register("search_tools", search_tools)


@hookimpl
def register_task_sets(register: Callable[[str, Callable[[], list[Task]]], None]) -> None:
    from rl_verifier_search_env.fictopedia import example_tasks, fictopedia_tasks

    register("fictopedia", fictopedia_tasks)
    register("search-example", example_tasks)
