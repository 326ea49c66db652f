"""Reference policies for the judge_rank recipe, scored by the recipe's own judge: each
held-out question's group of 4 is one fixed reply 4 times, as its held-out eval ranks a
policy's 4 samples. ``constant``: "I don't know." (the trivial baseline); ``ideal``: a
short, right answer written by hand (what the rubric asks for).

Run: python examples/judge_rank/with_judge.py python examples/judge_rank/baselines.py
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path
from statistics import fmean

from rl_verifier import Scorer, Status, Task

HERE = Path(__file__).parent
IDEAL = {
    "What is the colour of snow?": "White.",
    "What do you call a house made of ice?": "An igloo.",
    "What language is spoken in Spain?": "Spanish.",
    "Which fruit is used to make wine?": "Grapes.",
    "What shape is a football?": "Round (a sphere).",
    "What do you call a young dog?": "A puppy.",
    "What is the capital of Japan?": "Tokyo.",
    "What colour is a ripe banana?": "Yellow.",
    "What is the first letter of the alphabet?": "A.",
    "What is frozen water called?": "Ice.",
    "What do caterpillars turn into?": "Butterflies.",
    "What do you call the person who flies a plane?": "A pilot.",
}


def main() -> None:
    config = tomllib.loads((HERE / "judge_rank.toml").read_text())
    lines = (HERE / "heldout.jsonl").read_text().splitlines()
    tasks = [Task(**json.loads(line)) for line in lines]
    group_size = int(config["eval_n"])
    replies = {
        "constant": {t.id: "I don't know." for t in tasks},
        "ideal": {t.id: IDEAL[str(t.prompt)] for t in tasks},
    }
    with Scorer("judge_rank", config["verifier_config"], executor="inline") as scorer:
        for name, reply in replies.items():
            start = time.perf_counter()
            scores = [s for t in tasks for s in scorer.score_group(t, [reply[t.id]] * group_size)]
            ok = [s.reward for s in scores if s.status is Status.OK]
            mean = fmean(ok) if ok else float("nan")
            wall = time.perf_counter() - start
            print(f"{name:<9} mean reward {mean:.3f} over {len(ok)}/{len(scores)} ok rows "
                  f"({len(tasks)} held-out tasks x {group_size}), "
                  f"{wall:.0f} s, load {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
