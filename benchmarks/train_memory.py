"""Peak memory and speed of ``forward_backward`` on SmolLM2-135M, the ``rlv serve`` hot path.

Each case runs in a fresh child process (torch's allocator hides frees from Python-level
counters): it loads SmolLM2 on CPU, adds a rank-32 LoRA on every layer (as ``rlv train``
does), runs ``forward_backward`` with ``importance_sampling`` on N datums of T tokens and
prints the peak resident memory (``VmHWM`` of ``/proc/self/status``) after loading and
after the calls (one untimed 1-datum warm-up, then --steps timed), the estimate of the
largest micro-batch plus the loaded size, and the tokens per CPU second. Cases alternate
so both sides see the same load.

    .venv/bin/python benchmarks/train_memory.py --datums 4 --tokens 600 --steps 2 \
        --rounds 2 --compare old --compare 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = "--child"
OLD = "old"


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def old_token_logprobs(logits: Any, targets: Any) -> Any:
    """The path before the budget: a full log_softmax kept for backward, then gather."""
    import torch

    logprobs = torch.log_softmax(logits.float(), dim=-1)
    if targets.dim() == logits.dim():
        return logprobs.gather(-1, targets)
    return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def child(datums: int, tokens: int, budget: str, steps: int) -> None:
    import numpy as np
    import torch

    from rl_verifier_server.models import smollm2
    from rl_verifier_server.runtime import DatumIn, LoraSpec, ModelHost

    torch.manual_seed(0)
    options: dict[str, float] = {}
    if budget == OLD:  # token-count micro-batches only, log_softmax logprobs
        from rl_verifier_server.runtime import forward

        options["batch_memory_gb"] = 1e6
        monkey: Any = forward
        monkey.token_logprobs = old_token_logprobs
    elif budget != "None":
        options["batch_memory_gb"] = float(budget)
    host = ModelHost.load(smollm2.ensure_smollm2(), smollm2.SMOLLM2_NAME, "cpu", **options)
    host.trainers.create("a", LoraSpec(rank=32, seed=0))
    rng = np.random.default_rng(0)
    data = []
    for _ in range(datums):
        seq = rng.integers(0, 49152, size=tokens + 1)
        inputs: dict[str, np.ndarray] = {
            "target_tokens": seq[1:],
            "logprobs": np.full(tokens, -2.0, np.float32),
            "advantages": rng.normal(size=tokens).astype(np.float32),
        }
        data.append(DatumIn(list(map(int, seq[:-1])), inputs))
    loaded = vm_hwm_mb()
    host.forward_backward("a", data[:1], "importance_sampling", None, backward=True)
    cpu = time.process_time()
    wall = time.perf_counter()
    for _ in range(steps):
        result = host.forward_backward("a", data, "importance_sampling", None, backward=True)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    try:  # absent before the budget existed
        from rl_verifier_server.runtime.batch_memory import BatchMemory, peak_estimate

        memory = BatchMemory.of(host.base.model, backward=True)
        lengths = [tokens] * datums
        estimate = peak_estimate(lengths, memory, host.batch_memory_bytes, host.max_batch_tokens)
    except ImportError:
        estimate = 0
    print(
        json.dumps(
            {
                "loaded_mb": loaded,
                "peak_mb": vm_hwm_mb(),
                "estimate_mb": estimate / 2**20,
                "cpu_s": cpu,
                "wall_s": wall,
                "tokens_per_cpu_s": steps * datums * tokens / cpu,
                "loss": float(result.metrics.get("loss:sum", float("nan"))),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datums", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--compare",
        action="append",
        help="batch memory budgets (GiB) to run side by side; 'old': the path before the "
        "budget (8192-token micro-batches, log_softmax); none given: the server's default",
    )
    args = parser.parse_args()
    budgets: list[str] = list(args.compare or ["None"])
    print(f"{args.datums} datums x {args.tokens} tokens, forward_backward on SmolLM2 (cpu)")
    header = f"{'budget GiB':>10} {'loaded MB':>10} {'peak MB':>9} {'estimate MB':>11}"
    print(header + f" {'cpu s':>7} {'tokens/cpu s':>12} {'load avg':>9}")
    for _ in range(args.rounds):
        for budget in budgets:
            command = [sys.executable, __file__, CHILD, str(args.datums), str(args.tokens)]
            command += [str(budget), str(args.steps)]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            label = "default" if budget == "None" else budget
            print(
                f"{label:>10} {r['loaded_mb']:>10.0f} {r['peak_mb']:>9.0f} "
                f"{r['estimate_mb'] + r['loaded_mb']:>11.0f} {r['cpu_s']:>7.1f} "
                f"{r['tokens_per_cpu_s']:>12.0f} {os.getloadavg()[0]:>9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        main()
