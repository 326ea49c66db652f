"""Throughput of ``rlv serve`` through the real ``tinker`` SDK, and its per-call overhead.

Prints, side by side:
- sampled tokens/s (8 samples x --max-tokens new tokens, no stop)
- forward_backward tokens/s (8 datums x --seq-len tokens, importance_sampling)
- one training step (forward_backward + optim_step) wall time
- per-call overhead: an SDK round trip of a 2-token forward, and a bare HTTP healthz,
  each as a share of the training step (the overhead must be a small fraction)

Run: .venv/bin/python benchmarks/serve_throughput.py [--model rlv/tiny-chat]
     [--random-model 0.5b --device cuda]   # a randomly initialised model of realistic size
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

import tinker
from tinker import types

from rl_verifier_server.launch import LocalServer

RANDOM_SIZES = {  # Qwen2-shaped configs, randomly initialised (no weights can be downloaded)
    "0.5b": {
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
    },
    "1.5b": {
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
    },
}


def random_model(size: str, root: Path) -> Path:
    """A Qwen2 model of a realistic size with random weights and the tiny tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from rl_verifier_server.tiny_model import ensure_tiny_model

    tokenizer = AutoTokenizer.from_pretrained(ensure_tiny_model())
    config = Qwen2Config(
        vocab_size=32768,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        **RANDOM_SIZES[size],
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    target = root / f"random-qwen2-{size}"
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def timed(fn, repeats: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="rlv/tiny-chat")
    parser.add_argument("--random-model", choices=sorted(RANDOM_SIZES))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--rank", type=int, default=32)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="rlv-bench-"))
    model = str(random_model(args.random_model, workdir)) if args.random_model else args.model
    server = LocalServer(workdir / "data", preload=(model,), device=args.device)
    started = time.perf_counter()
    server.start()
    startup_s = time.perf_counter() - started
    with server:
        os.environ.update(TINKER_BASE_URL=server.url, TINKER_API_KEY="tml-local")
        client = tinker.ServiceClient()
        training = client.create_lora_training_client(
            base_model=model, rank=args.rank, seed=0
        ).result()
        sampler = training.save_weights_and_get_sampling_client().result()
        prompt = types.ModelInput.from_ints(list(range(10, 42)))
        params = types.SamplingParams(max_tokens=args.max_tokens, stop=[], seed=0)
        sampler.sample(prompt=prompt, num_samples=8, sampling_params=params).result()  # warm-up
        sample_s = timed(
            lambda: sampler.sample(prompt=prompt, num_samples=8, sampling_params=params).result()
        )
        tokens = list(range(3, 3 + args.seq_len + 1))
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={
                "target_tokens": tokens[1:],
                "logprobs": [-1.0] * args.seq_len,
                "advantages": [0.1] * args.seq_len,
            },
        )
        batch = [datum] * 8

        def step() -> None:
            training.forward_backward(batch, "importance_sampling").result()
            training.optim_step(types.AdamParams(learning_rate=1e-5)).result()

        step()
        fwdbwd_s = timed(lambda: training.forward_backward(batch, "importance_sampling").result())
        step_s = timed(step)
        tiny = types.Datum(
            model_input=types.ModelInput.from_ints([1, 2]),
            loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0]},
        )
        call_s = timed(lambda: training.forward([tiny], "cross_entropy").result(), repeats=20)

        def health() -> None:
            with urllib.request.urlopen(f"{server.url}/api/v1/healthz", timeout=5) as answer:
                answer.read()

        http_s = timed(health, repeats=50)

    print(f"model: {model}  device: {args.device}  LoRA rank {args.rank}")
    print(f"{'figure':<46} {'value':>12}")
    print(f"{'start to healthz answered, s (target < 10)':<46} {startup_s:>12.2f}")
    print(
        f"{f'sampled tokens/s (8 x {args.max_tokens} new)':<46} "
        f"{8 * args.max_tokens / sample_s:>12.1f}"
    )
    print(
        f"{f'forward_backward tokens/s (8 x {args.seq_len})':<46} "
        f"{8 * args.seq_len / fwdbwd_s:>12.1f}"
    )
    print(f"{'training step (fwd_bwd + optim_step) s':<46} {step_s:>12.3f}")
    print(
        f"{'SDK round trip, 2-token forward, ms':<46} {1000 * call_s:>12.2f}"
        f"   = {100 * call_s / step_s:.1f}% of a step"
    )
    print(
        f"{'HTTP round trip, healthz, ms':<46} {1000 * http_s:>12.2f}"
        f"   = {100 * http_s / step_s:.2f}% of a step"
    )


if __name__ == "__main__":
    main()
