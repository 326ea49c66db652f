"""Entry point: the ``search_tools`` environment and the Fictopedia task sets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rl_verifier import EnvironmentRegistrar, Preset, PresetRegistrar, TaskSetRegistrar, hookimpl
from rl_verifier_search_env.settings import SearchSettings

if TYPE_CHECKING:
    from rl_verifier.train import Environment, TrainConfig


@hookimpl
def register_environments(register: EnvironmentRegistrar) -> None:
    def search_tools(config: TrainConfig, settings: SearchSettings) -> Environment:
        from rl_verifier_search_env.env import make_env

        return make_env(config, settings)

    register("search_tools", search_tools, settings=SearchSettings)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    from rl_verifier_search_env.fictopedia import example_tasks, fictopedia_tasks

    register("fictopedia", fictopedia_tasks)
    register("search-example", example_tasks)


@hookimpl
def register_presets(register: PresetRegistrar) -> None:
    # Spans two plugins: shown only while tool_calls is installed too.
    register(
        Preset(
            "Reward cited tool calls and thrift",
            "tool_calls",
            "taskset:fictopedia",
            environment="search_tools",
            max_turns=4,
        )
    )
