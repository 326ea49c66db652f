"""Throughput of ``rlv serve`` through the real ``tinker`` SDK beside plain transformers +
peft doing the same work in the same run, and the server's per-call overhead.

Prints, side by side with the baseline and the ratio (goal: within 10%, ratio >= 0.90):
- sampled tokens/s for a group of 8 (8 samples x --max-tokens new tokens, no stop, KV
  cache, batched) through a LoRA sampler, against ``PeftModel.generate`` on the same model
  with the same LoRA shape (the prompt repeated 8 times, ``min_new_tokens`` = ``max_new``)
- LoRA training tokens/s (8 datums x --seq-len tokens: forward_backward with
  importance_sampling + optim_step), against a plain peft step: forward, the same loss,
  backward, ``torch.optim.AdamW.step``
- the same two figures per CPU second: the server's CPU time plus this process's (the SDK)
  against this process's CPU time for plain, which a busy machine disturbs far less than
  wall time
- 8 concurrent requests of one sample each (the LLM judge's pattern, batched by the
  server) against one group-of-8 request: their wall time
- forward_backward alone, and the per-call overhead: an SDK round trip of a 2-token forward
  and a bare HTTP healthz, each as a share of the training step

Both sides are timed in turns (server, plain, server, plain, ...) and each figure is the
median of its turns, so on a shared machine both see the same load; while one side runs
the other is idle (the server in its own process, the baseline in this one). The load
average is printed beside the figures.

Run: .venv/bin/python benchmarks/serve_throughput.py   # SmolLM2-135M-Instruct, CPU fp32
     [--model rlv/tiny-chat] [--device cuda]          # on a GPU: bf16 on both sides
     [--random-model 0.5b]                            # a random model of realistic size
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tinker
from tinker import types

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.runtime.lora import DEFAULT_LORA_ALPHA

DEFAULT_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
GROUP = 8
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

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

    from rl_verifier_server.models.tiny_model import ensure_tiny_model

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


def plain_peft(directory: Path, device: str, rank: int) -> tuple[Any, Any, str]:
    """The model as a plain user would load it, with a LoRA of the server's shape."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    device = device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float32 if device == "cpu" else torch.bfloat16  # as rlv serve
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype).to(device)
    config = LoraConfig(
        r=rank,
        lora_alpha=int(DEFAULT_LORA_ALPHA),
        target_modules=[*LORA_TARGETS, "lm_head"],
        lora_dropout=0.0,
        bias="none",
    )
    torch.manual_seed(0)
    return get_peft_model(model, config), torch, device


def baseline(
    directory: Path, device: str, rank: int, max_tokens: int, seq_len: int
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Plain transformers ``generate`` and a plain peft training step, same work."""
    model, torch, device = plain_peft(directory, device, rank)
    prompt = torch.tensor([list(range(10, 42))] * GROUP, device=device)
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else 0

    def sample() -> None:
        model.eval()
        with torch.inference_mode():
            model.generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=True,
                max_new_tokens=max_tokens,
                min_new_tokens=max_tokens,
                top_k=0,
                pad_token_id=pad,
            )

    tokens = torch.tensor([list(range(3, 3 + seq_len + 1))] * GROUP, device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    old = torch.full(targets.shape, -1.0, device=device)
    advantages = torch.full(targets.shape, 0.1, device=device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-5, weight_decay=0.0)

    def step() -> None:
        model.train()
        logits = model(input_ids=inputs).logits.float()
        lp = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
        loss = -(torch.exp(lp - old) * advantages).sum()  # importance_sampling
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    sample()  # warm-up
    step()
    return sample, step


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_turns(pairs: dict[str, tuple[Callable[[], None], Callable[[], None]]], repeats: int,
             server_pid: int) -> dict[str, tuple[float, float, float, float]]:  # fmt: skip
    """Median (wall s ours, wall s plain, CPU s ours, CPU s plain) of each pair, timed
    alternately. Our CPU seconds are the server's plus this process's (the SDK's share);
    plain's are this process's."""
    times: dict[str, list[list[float]]] = {k: [[], [], [], []] for k in pairs}
    for _ in range(repeats):
        for key, (ours, plain) in pairs.items():
            for side, fn in enumerate((ours, plain)):
                server_before, cpu_before = process_cpu_s(server_pid), time.process_time()
                start = time.perf_counter()
                fn()
                times[key][side].append(time.perf_counter() - start)
                cpu = time.process_time() - cpu_before
                if side == 0:
                    cpu += process_cpu_s(server_pid) - server_before
                times[key][2 + side].append(cpu)
    return {
        k: (statistics.median(a), statistics.median(b), statistics.median(c), statistics.median(d))
        for k, (a, b, c, d) in times.items()
    }


def model_directory(name: str) -> Path:
    from rl_verifier_server.models.catalog import resolve

    return resolve(name).directory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--random-model", choices=sorted(RANDOM_SIZES))
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="alternating turns per figure")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="rlv-bench-"))
    model = str(random_model(args.random_model, workdir)) if args.random_model else args.model
    server = LocalServer(workdir / "data", preload=(model,), device=args.device)
    started = time.perf_counter()
    server.start()
    startup_s = time.perf_counter() - started
    # The client is closed (its heartbeat stopped) before the server goes.
    with server, tinker.ServiceClient(base_url=server.url, api_key="tml-local") as client:
        training = client.create_lora_training_client(
            base_model=model, rank=args.rank, seed=0
        ).result()
        sampler = training.save_weights_and_get_sampling_client().result()
        prompt = types.ModelInput.from_ints(list(range(10, 42)))
        params = types.SamplingParams(max_tokens=args.max_tokens, stop=[], seed=0)
        sampler.sample(prompt=prompt, num_samples=GROUP, sampling_params=params).result()  # warm
        tokens = list(range(3, 3 + args.seq_len + 1))
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={
                "target_tokens": tokens[1:],
                "logprobs": [-1.0] * args.seq_len,
                "advantages": [0.1] * args.seq_len,
            },
        )
        batch = [datum] * GROUP

        def step() -> None:
            training.forward_backward(batch, "importance_sampling").result()
            training.optim_step(types.AdamParams(learning_rate=1e-5)).result()

        step()
        plain_sample, plain_step = baseline(
            model_directory(model), args.device, args.rank, args.max_tokens, args.seq_len
        )

        def group() -> None:
            sampler.sample(prompt=prompt, num_samples=GROUP, sampling_params=params).result()

        def singles() -> None:  # the judge's pattern: GROUP requests of one sample at once
            seeded = [params.model_copy(update={"seed": i}) for i in range(GROUP)]
            pending = [sampler.sample(prompt=prompt, num_samples=1, sampling_params=p)
                       for p in seeded]  # fmt: skip
            for future in pending:
                future.result()

        assert server.process is not None
        load_before = os.getloadavg()[0]
        medians = in_turns(
            {"sample": (group, plain_sample), "step": (step, plain_step),
             "singles": (singles, group)},
            args.repeats,
            server.process.pid,
        )  # fmt: skip
        load_after = os.getloadavg()[0]
        fwdbwd_s = timed(lambda: training.forward_backward(batch, "importance_sampling").result())
        tiny = types.Datum(
            model_input=types.ModelInput.from_ints([1, 2]),
            loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0]},
        )
        call_s = timed(lambda: training.forward([tiny], "cross_entropy").result(), repeats=20)

        def health() -> None:
            with urllib.request.urlopen(f"{server.url}/api/v1/healthz", timeout=5) as answer:
                answer.read()

        http_s = timed(health, repeats=50)

    sample_s, plain_sample_s, sample_cpu, plain_sample_cpu = medians["sample"]
    step_s, plain_step_s, step_cpu, plain_step_cpu = medians["step"]
    singles_s, group_s, singles_cpu, _ = medians["singles"]
    sampled = GROUP * args.max_tokens
    trained = GROUP * args.seq_len
    print(f"model: {model}  device: {args.device}  LoRA rank {args.rank}")
    print(f"load average (1 min) {load_before:.1f} before the timed turns, {load_after:.1f} after;"
          f" {os.cpu_count()} cores; medians of {args.repeats} alternating turns")  # fmt: skip
    print(f"{'figure':<46} {'rlv serve':>12} {'plain':>12} {'ratio':>7}")
    for label, ours, theirs in (
        (f"sampled tokens/s (group of {GROUP} x {args.max_tokens} new)", sampled / sample_s,
         sampled / plain_sample_s),
        (f"trained tokens/s ({GROUP} x {args.seq_len}, fwd_bwd + optim)", trained / step_s,
         trained / plain_step_s),
    ):  # fmt: skip
        print(f"{label:<46} {ours:>12.1f} {theirs:>12.1f} {ours / theirs:>7.2f}")
    for label, ours, theirs in (
        ("sampled tokens per CPU second (same work)", sampled / sample_cpu,
         sampled / plain_sample_cpu),
        ("trained tokens per CPU second (same work)", trained / step_cpu,
         trained / plain_step_cpu),
    ):  # fmt: skip
        print(f"{label:<46} {ours:>12.1f} {theirs:>12.1f} {ours / theirs:>7.2f}")
    print(f"{f'{GROUP} concurrent 1-sample requests, s':<46} {singles_s:>12.2f}"
          f"   CPU {singles_cpu:.2f} s")  # fmt: skip
    print(f"{f'one group-of-{GROUP} request, s':<46} {group_s:>12.2f}"
          f"   = {group_s / singles_s:.2f} x the concurrent requests' time")  # fmt: skip
    print(f"{'start to healthz answered, s (target < 10)':<46} {startup_s:>12.2f}")
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
