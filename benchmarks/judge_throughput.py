"""Judge calls per second and cache hit rate at 1, 8 and 32 concurrent samples, against a
local ``rlv serve`` OpenAI-compatible endpoint, side by side with the cache off.

For each level C, ``2*C`` completions (a quarter of them repeats, as RL groups have) are
scored with the ``judge`` verifier through one ``Scorer`` whose judge and engine allow C
calls at once: first with the judge-call cache off (the baseline: every sample is a
call), then with a fresh on-disk cache, then re-scored (a resumed run: no call at all).

Run: .venv/bin/python benchmarks/judge_throughput.py [--model rlv/tiny-chat] [--levels 1,8,32]
     [--format logprobs]
     (the default judge is the built-in SmolLM2-135M-Instruct; --max-tokens bounds replies;
     --format logprobs: one score digit on 1..5 read from the first token's probabilities,
     replies of at most 3 tokens; "not ok": the share of rows that are not ``ok``, mostly
     replies not in the asked format; "load": the 1-minute load average after the row)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rl_verifier import Score, Scorer, Task
from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2

TASK = Task(id="capital", prompt="What is the capital of France?", reference={"answer": "Paris"})


def completions(count: int) -> list[str]:
    distinct = [f"The capital is Paris (answer {n})." for n in range(count - count // 4)]
    return distinct + distinct[: count // 4]


def run(settings: dict[str, Any], texts: list[str], concurrency: int) -> tuple[float, list[Score]]:
    with Scorer("judge", {**settings, "judge_concurrency": concurrency}, executor="inline",
                workers=max(concurrency // 4, 1)) as scorer:  # fmt: skip
        start = time.perf_counter()
        scores = scorer.score_many([(TASK, t) for t in texts])
        return time.perf_counter() - start, scores


def figures(wall: float, scores: list[Score]) -> tuple[int, float, float, float]:
    calls = sum(s.info.get("judge", {}).get("calls", 0) for s in scores)
    cached = sum(s.info.get("judge", {}).get("cached_calls", 0) for s in scores)
    asked = calls + cached
    errors = sum(s.status.value != "ok" for s in scores) / len(scores)
    return calls, calls / wall, cached / asked if asked else 0.0, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=smollm2.SMOLLM2_NAME)
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--format", choices=["score_line", "logprobs"], default="score_line")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        preload = tuple(dict.fromkeys(["rlv/tiny-chat", args.model]))
        with LocalServer(data / "serve", preload=preload) as server:
            base = {"base_url": f"{server.url}/v1", "model": args.model,
                    "max_tokens": args.max_tokens, "deadline_s": 600, "retries": 0,
                    "format": args.format}  # fmt: skip
            if args.format == "logprobs":
                base["scale"] = (1, 5)
            replies = ("one score digit" if args.format == "logprobs"
                       else f"replies <= {args.max_tokens} tokens")  # fmt: skip
            print(f"judge {args.model} at {server.url}/v1, format {args.format}, {replies}")
            run({**base, "cache": "off"}, ["warm-up"], 1)  # the model's first call loads it
            header = f"{'concurrent':>10} {'run':<10} {'samples':>7} {'wall s':>7} {'calls':>6} "
            print(header + f"{'calls/s':>8} {'samples/s':>9} {'hit rate':>9} {'not ok':>7} load")
            for level in levels:
                texts = completions(2 * level)
                cache = str(data / f"cache-{level}.sqlite")
                runs = [("cache off", {**base, "cache": "off"}),
                        ("cache on", {**base, "cache": cache}),
                        ("re-score", {**base, "cache": cache})]  # fmt: skip
                for label, settings in runs:
                    wall, scores = run(settings, texts, level)
                    calls, rate, hits, bad = figures(wall, scores)
                    speed = len(texts) / wall
                    print(f"{level:>10} {label:<10} {len(texts):>7} {wall:>7.2f} {calls:>6} "
                          f"{rate:>8.2f} {speed:>9.1f} {hits:>9.2f} {bad:>7.2f} "
                          f"{os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
