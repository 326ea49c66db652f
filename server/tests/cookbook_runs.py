"""Runs of the real, unmodified ``tinker-cookbook`` against an ``rlv serve`` (used by
``test_cookbook.py``, in a process of its own so that ``HF_HUB_OFFLINE`` is set before
Hugging Face is imported, as for a user's script).

``python cookbook_runs.py URL WORK_DIR RESULTS.json SCENARIO...`` runs each scenario with
the cookbook's own ``rl.train.main`` or ``supervised.train.main`` and writes, per scenario,
what the test checks: the log folder and whether it raised. The only adaptation to the
built-in model is naming its renderer (``qwen3_instruct``, the ChatML it was built with).

The RL task is a toy one: a reward from the answer's length, so groups get different rewards
(and advantages) even from an untrained model.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chz
from tinker_cookbook import renderers
from tinker_cookbook.rl import train as rl_train
from tinker_cookbook.rl.problem_env import ProblemEnv, ProblemGroupBuilder
from tinker_cookbook.rl.types import EnvGroupBuilder, RLDataset, RLDatasetBuilder
from tinker_cookbook.supervised import train as sl_train
from tinker_cookbook.supervised.data import FromConversationFileBuilder
from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig
from tinker_cookbook.tokenizer_utils import get_tokenizer

MODEL = "rlv/tiny-chat"
RENDERER = "qwen3_instruct"
QUESTIONS = ["Say yes.", "Count to three.", "Name a colour.", "What is 2 + 2?"]


class LengthEnv(ProblemEnv):
    """Rewarded for an answer of even length: a coin flip for an untrained model."""

    def __init__(self, renderer: renderers.Renderer, question: str) -> None:
        super().__init__(renderer, format_coef=0.0)
        self.question = question

    def get_question(self) -> str:
        return self.question

    def check_answer(self, sample_str: str) -> bool:
        return len(sample_str) % 2 == 0

    def check_format(self, sample_str: str) -> bool:
        return True

    def get_reference_answer(self) -> str:
        return "an answer of even length"


class Questions(RLDataset):
    def __init__(self, renderer: renderers.Renderer, groups: int, group_size: int) -> None:
        self.renderer = renderer
        self.groups = groups
        self.group_size = group_size

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        picked = [QUESTIONS[(index * self.groups + i) % len(QUESTIONS)] for i in range(self.groups)]
        return [
            ProblemGroupBuilder(
                env_thunk=lambda q=question: LengthEnv(self.renderer, q),  # type: ignore[misc]
                num_envs=self.group_size,
            )
            for question in picked
        ]

    def __len__(self) -> int:
        return 100


@chz.chz
class QuestionsBuilder(RLDatasetBuilder):
    groups: int = 2
    group_size: int = 3

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        renderer = renderers.get_renderer(RENDERER, get_tokenizer(MODEL))
        return Questions(renderer, self.groups, self.group_size), None


def rl_config(url: str, log_path: Path, **changes: Any) -> rl_train.Config:
    settings: dict[str, Any] = {
        "learning_rate": 1e-3,
        "dataset_builder": QuestionsBuilder(),
        "model_name": MODEL,
        "renderer_name": RENDERER,
        "recipe_name": "rlv_serve_test",
        "max_tokens": 6,
        "log_path": str(log_path),
        "base_url": url,
        "lora_rank": 4,
        "eval_every": 0,
        "save_every": 0,
        "max_steps": 2,
        "num_groups_to_log": 0,
        "rollout_json_export": False,
        **changes,
    }
    return rl_train.Config(**settings)


def sl_config(url: str, log_path: Path, work: Path) -> sl_train.Config:
    conversations = work / "conversations.jsonl"
    rows = [
        {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": "Yes."}]}
        for q in QUESTIONS
    ]
    conversations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    common = ChatDatasetBuilderCommonConfig(
        model_name_for_tokenizer=MODEL, renderer_name=RENDERER, max_length=64, batch_size=2
    )
    return sl_train.Config(
        log_path=str(log_path),
        model_name=MODEL,
        recipe_name="rlv_serve_test",
        renderer_name=RENDERER,
        dataset_builder=FromConversationFileBuilder(
            file_path=str(conversations), common_config=common
        ),
        learning_rate=1e-3,
        lora_rank=4,
        base_url=url,
        save_every=0,
        eval_every=0,
        max_steps=2,
    )


def run(scenario: str, url: str, work: Path) -> None:
    log = work / scenario
    if scenario == "rl":  # the default loss of this cookbook release, rolling checkpoints
        asyncio.run(rl_train.main(rl_config(url, log, rolling_save_every=1)))
    elif scenario == "resume":  # two steps, then the same run again for a third
        asyncio.run(rl_train.main(rl_config(url, log, save_every=1)))
        asyncio.run(rl_train.main(rl_config(url, log, save_every=1, max_steps=3)))
    elif scenario == "sl":
        asyncio.run(sl_train.main(sl_config(url, log, work)))
    elif scenario == "ppo_kl":
        reference = rl_train.KLReferenceConfig(base_model=MODEL)
        config = rl_config(
            url, log, loss_fn="ppo", kl_penalty_coef=0.1, kl_reference_config=reference
        )
        asyncio.run(rl_train.main(config))
    elif scenario == "async":  # off-policy: the async default loss, stable_reinforce
        config = rl_config(
            url, log, async_config=rl_train.AsyncConfig(max_steps_off_policy=1, groups_per_batch=2)
        )
        asyncio.run(rl_train.main(config))
    elif scenario == "streaming":
        streaming = rl_train.StreamMinibatchConfig(groups_per_batch=2, num_minibatches=2)
        asyncio.run(rl_train.main(rl_config(url, log, stream_minibatch_config=streaming)))
    else:
        raise ValueError(f"unknown scenario {scenario!r}")


def main() -> None:
    url, work, results_file, *scenarios = sys.argv[1:]
    results: dict[str, Any] = {}
    for scenario in scenarios:
        try:
            run(scenario, url, Path(work))
            results[scenario] = {"error": None}
        except BaseException:  # noqa: BLE001 - report every scenario, whatever happened
            results[scenario] = {"error": traceback.format_exc()}
        Path(results_file).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
