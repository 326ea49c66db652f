"""``rlv serve`` against hostile sampling and training parameters: one request's values
never fail the others batched with it, every parameter is checked into its range before the
request is queued (a 4xx, never a 5xx), a prompt is bounded in size before it is tokenised,
and tokenised off the compute thread, and a forward_backward call is bounded in size and its
datums checked before it is queued.

Two servers: ``server`` spends 3 s in each ``optim_step``, so sample requests sent during
one are decoded as one batch after it; ``held`` stops its compute thread for good inside an
``optim_step``, so whatever it answers, it answered without the compute thread.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest
import tinker
from tinker import types
from tinker.proto import tinker_public_pb2 as pb
from tinker.proto.request_conv import forward_backward_request_to_proto

from rl_verifier_server.base.limits import (
    MAX_DATUMS,
    MAX_STOP_CHARS,
    MAX_STOP_SEQUENCES,
    ServerLimits,
)
from rl_verifier_server.launch import LocalServer

KEY = "tml-hostile-sampling"
MODEL = "rlv/tiny-chat"
SLOW_STEP_S = 3
HUGE = "1" + "0" * 400  # a JSON integer no float holds
NOT_NUMBERS = [HUGE, "-" + HUGE, "NaN", "Infinity", "-Infinity", '"1"', "[1]", "true", "{}"]
PROMPT = {"chunks": [{"type": "encoded_text", "tokens": [1, 2, 3]}]}
CHAT = '"model": "rlv/tiny-chat", "messages": [{"role": "user", "content": "hi"}]'
COMPLETION = '"model": "rlv/tiny-chat", "prompt": "hi"'
# Per route, each field and the values it refuses besides NOT_NUMBERS.
OPENAI_FIELDS: dict[str, dict[str, list[str]]] = {
    "chat/completions": {
        "temperature": ["-0.5", "2.5", "1e308"],
        "top_p": ["0", "1.5", "1e-400"],
        "n": ["0", "1.5", "1e308"],
        "max_tokens": ["0", "-1", "1e308"],
        "max_completion_tokens": ["0", "1e308"],
        "seed": ["1.5", "1e308"],
        "top_logprobs": ["-1", "21"],
        "frequency_penalty": ["0.5"],
        "presence_penalty": ["-2"],
    },
    "completions": {
        "temperature": ["-1", "3"],
        "top_p": ["-0.1", "2"],
        "n": ["-1"],
        "max_tokens": ["0"],
        "seed": ["0.5"],
        "logprobs": ["-1", "6"],
        "best_of": ["2"],
    },
}
TINKER_FIELDS: dict[str, list[str]] = {
    "temperature": ["-0.5", "101", "1e308"],
    "top_p": ["0", "1.5", "1e-400"],
    "top_k": ["-2", "1.5", "1e308"],
    "max_tokens": ["0", "-1", "1e308"],
    "seed": ["0.5", "1e308"],
}
ADAM_FIELDS: dict[str, list[str]] = {
    "learning_rate": ["-1"],
    "beta1": ["1", "-0.1"],
    "beta2": ["1.5"],
    "eps": ["-1e-8"],
    "weight_decay": ["-1"],
    "grad_clip_norm": ["-1"],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("slow-step-data")
    env = {"RLV_SERVE_TEST_SLOW": f"optim_step={SLOW_STEP_S}"}
    args = ["--api-key", KEY]
    with LocalServer(data, log_path=data.parent / "slow.log", extra_args=args, env=env) as up:
        yield up


@dataclass
class Held:
    server: LocalServer
    api: Any  # conftest.Api
    model_id: str


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory, api_factory: Any) -> Iterator[Held]:
    data = tmp_path_factory.mktemp("held-data")
    paused = data.parent / "held-paused"
    env = {"RLV_SERVE_TEST_PAUSE": "optim_step", "RLV_SERVE_TEST_PAUSE_FILE": str(paused)}
    server = LocalServer(data, log_path=data.parent / "held.log", extra_args=["--api-key", KEY],
                         env=env)  # fmt: skip
    server.start()
    try:
        api = api_factory(server.url, KEY)
        model_id = api.create_model(api.session()).value["model_id"]
        step = {"model_id": model_id, "seq_id": api.next_seq(model_id),
                "adam_params": {"learning_rate": 1e-3}}  # fmt: skip
        assert api.post("optim_step", step).status_code == 200
        deadline = time.monotonic() + 120
        while not paused.exists():  # the compute thread is inside optim_step, for good
            assert time.monotonic() < deadline, "the server never reached its pause point"
            time.sleep(0.02)
        yield Held(server, api, model_id)
    finally:
        assert server.process is not None
        os.killpg(server.process.pid, signal.SIGKILL)  # its compute thread never returns
        server.process.wait()


def http(server: LocalServer) -> httpx.Client:
    """A client that sends JSON text as is (a 400-digit number or NaN survives no JSON
    library), with the key."""
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def rss_mb(server: LocalServer) -> float:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def in_one_batch(server: LocalServer, api: Any, calls: list[Callable[[], Any]]) -> list[Any]:
    """Every call's value, the calls made at once while the compute thread spends
    ``SLOW_STEP_S`` in an optim_step: the sample requests among them queue behind it and
    are decoded as one batch."""
    model_id = api.create_model(api.session()).value["model_id"]
    step = {"model_id": model_id, "seq_id": api.next_seq(model_id),
            "adam_params": {"learning_rate": 1e-3}}  # fmt: skip
    assert api.post("optim_step", step).status_code == 200
    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


TINY = [{"temperature": 1e-300}, {"temperature": 1e-46}, {"top_p": 1e-300, "seed": 1}]
OTHERS: list[dict[str, Any]] = [{"temperature": 1.0, "seed": 2}, {"temperature": 0.7}, {}]


def test_a_tiny_temperature_is_greedy_and_fails_no_openai_request_beside_it(
    server: LocalServer, api_factory: Any
) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)

    def text(**options: Any) -> str:
        answer = client.completions.create(model=MODEL, prompt="The cat", max_tokens=8, **options)
        return answer.choices[0].text

    greedy = text(temperature=0)
    calls = [lambda o=options: text(**o) for options in TINY + OTHERS]
    texts = in_one_batch(server, api_factory(server.url, KEY), calls)
    assert texts[: len(TINY)] == [greedy] * len(TINY)


def test_a_tiny_temperature_is_greedy_and_fails_no_tinker_sample_beside_it(
    server: LocalServer, api_factory: Any
) -> None:
    with tinker.ServiceClient(base_url=server.url, api_key=KEY) as service:
        sampler = service.create_sampling_client(base_model=MODEL).result()
        prompt = types.ModelInput.from_ints([1, 2, 3])

        def drawn(**options: Any) -> list[int]:
            params = types.SamplingParams(max_tokens=8, stop=[], **options)
            return list(sampler.sample(prompt, 2, params).result().sequences[1].tokens)

        greedy = drawn(temperature=0.0)
        calls = [lambda o=options: drawn(**o) for options in TINY + OTHERS]
        tokens = in_one_batch(server, api_factory(server.url, KEY), calls)
    assert tokens[: len(TINY)] == [greedy] * len(TINY)


def object_text(fields: dict[str, str]) -> str:
    """A JSON object from raw JSON value texts."""
    return "{" + ", ".join(f'"{key}": {value}' for key, value in fields.items()) + "}"


def openai_bodies() -> Iterator[tuple[str, str, str, str]]:
    """(route, field, value, body) for every refused value of an OpenAI request."""
    for route, table in OPENAI_FIELDS.items():
        start = CHAT if route == "chat/completions" else COMPLETION
        for field, values in table.items():
            extra = ', "logprobs": true' if field == "top_logprobs" else ""
            if field not in ("max_tokens", "max_completion_tokens"):
                extra += ', "max_tokens": 2'
            for value in NOT_NUMBERS + values:
                yield f"/v1/{route}", field, value, f'{{{start}, "{field}": {value}{extra}}}'
        too_many = ", ".join(['"x"'] * 5)
        for stop in [f"[{too_many}]", f'["{"x" * (MAX_STOP_CHARS + 1)}"]', '[""]', "[1]", "7"]:
            yield f"/v1/{route}", "stop", stop, f'{{{start}, "max_tokens": 2, "stop": {stop}}}'
    model = '"model": "rlv/tiny-chat", "max_tokens": 2'
    for tokens in [f"[1, {HUGE}]", f"[[1], [-{HUGE}]]"]:
        yield "/v1/completions", "prompt", tokens, f'{{{model}, "prompt": {tokens}}}'


def asample_body(sampling_params: dict[str, str], num_samples: str = "1") -> str:
    params = object_text({"max_tokens": "2", "seed": "1", **sampling_params})
    return object_text(
        {"base_model": f'"{MODEL}"', "num_samples": num_samples,
         "prompt": json.dumps(PROMPT), "sampling_params": params}
    )  # fmt: skip


def tinker_bodies(held: Held) -> Iterator[tuple[str, str, str, str]]:
    """(route, field, value, body) for every refused value of asample and optim_step."""
    for field, values in TINKER_FIELDS.items():
        for value in NOT_NUMBERS + values:
            yield "/api/v1/asample", field, value, asample_body({field: value})
    for tokens in [f"[1, {HUGE}]", f"[-{HUGE}]", "[1.5]", "[]"]:
        body = asample_body({}).replace("[1, 2, 3]", tokens)
        yield "/api/v1/asample", "prompt", tokens, body
    for value in [*NOT_NUMBERS, "0", "-1", "129"]:
        yield "/api/v1/asample", "num_samples", value, asample_body({}, value)
    many = ", ".join(["1"] * (MAX_STOP_SEQUENCES + 1))
    long = f'["{"x" * (MAX_STOP_CHARS + 1)}"]'
    for stop in [f"[{many}]", long, '""', "[-1]", "[1.5]", '["a", 1]', f"[{HUGE}]"]:
        yield "/api/v1/asample", "stop", stop, asample_body({"stop": stop})
    for field, values in ADAM_FIELDS.items():
        for value in NOT_NUMBERS + values:
            adam = object_text({"learning_rate": "0.001", field: value})
            seq = held.api.next_seq(held.model_id)
            body = f'{{"model_id": "{held.model_id}", "seq_id": {seq}, "adam_params": {adam}}}'
            yield "/api/v1/optim_step", field, value, body


def test_every_bad_parameter_is_refused_before_the_request_is_queued(held: Held) -> None:
    """The compute thread is held: a request that got queued would never be answered."""
    with http(held.server) as client:
        answers = {
            (route, field, value): client.post(route, content=body)
            for route, field, value, body in [*openai_bodies(), *tinker_bodies(held)]
        }
    wrong = [
        (*where, answer.status_code, answer.text[:120])
        for where, answer in answers.items()
        if not (400 <= answer.status_code < 500 and where[1] in answer.text)
    ]
    assert not wrong, wrong
    huge = answers["/v1/completions", "temperature", HUGE].json()["error"]["message"]
    assert huge.startswith("'temperature' is too large a number, got 100000"), huge
    longest = max(len(answer.text) for answer in answers.values())
    assert longest < 400, "an error message quotes a client's value whole"


def test_a_prompt_is_bounded_before_tokenising_and_checked_off_the_compute_thread(
    held: Held,
) -> None:
    limits = ServerLimits()
    huge = "a" * (10 * limits.max_prompt_chars)  # 10 million characters
    before = rss_mb(held.server)
    with http(held.server) as client:
        for route, body in [
            ("chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": huge}]}),
            ("completions", {"model": MODEL, "prompt": huge, "max_tokens": 1}),
        ]:
            answer = client.post(f"/v1/{route}", content=json.dumps(body))
            assert answer.status_code == 400, answer.text
            assert "--max-prompt-chars" in answer.json()["error"]["message"]
        grown = rss_mb(held.server) - before
        assert grown < 150, f"the server grew by {grown:.0f} MiB on a prompt it refused"
        # Within --max-prompt-chars, but far past the model's context of 2048 tokens.
        long = "word " * 20_000
        ids = [1] * 5000
        chunks = {"chunks": [{"type": "encoded_text", "tokens": ids}]}
        message = {"role": "user", "content": long}
        for route, body in [
            ("/v1/chat/completions", {"model": MODEL, "messages": [message]}),
            ("/v1/completions", {"model": MODEL, "prompt": long}),
            ("/v1/completions", {"model": MODEL, "prompt": ids}),
            ("/api/v1/asample", {"base_model": MODEL, "prompt": chunks, "sampling_params": {}}),
        ]:
            answer = client.post(route, content=json.dumps(body))
            assert answer.status_code == 400 and "context length" in answer.text, answer.text
        # A JSON body is bounded by the prompt limit too: 413 before it is parsed.
        chunks = {
            "chunks": [{"type": "encoded_text", "tokens": [1] * (limits.max_json_bytes // 2)}]
        }
        answer = client.post(
            "/api/v1/asample", content=json.dumps({"base_model": MODEL, "prompt": chunks})
        )
        assert answer.status_code == 413 and "--max-prompt-chars" in answer.text, answer.text


def forward_backward_body(held: Held, data: list[types.Datum], loss_fn: str) -> bytes:
    """A forward_backward body as the SDK encodes it, for the held client's next seq_id."""
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(data=data, loss_fn=loss_fn),
        model_id=held.model_id,
        seq_id=held.api.next_seq(held.model_id),
    )
    return bytes(forward_backward_request_to_proto(request).SerializeToString())


def tokens_datum(count: int, **inputs: list[float]) -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints([1] * count),
        loss_fn_inputs={"target_tokens": [2] * count, **inputs},
    )


def sparse_body(held: Held, datums: int) -> bytes:
    """``datums`` one-token datums whose target_tokens are CSR zeros of shape [1, 2^24]: a few
    hundred bytes standing for ``datums`` x 16 Mi values."""
    request = pb.ForwardBackwardRequest(
        model_id=held.model_id, seq_id=held.api.next_seq(held.model_id), loss_fn="cross_entropy"
    )
    for _ in range(datums):
        datum = request.data.add()
        datum.model_input.add().encoded_text.tokens = np.ones(1, np.int32).tobytes()
        targets = datum.loss_fn_inputs["target_tokens"]
        targets.dtype, targets.shape[:] = pb.DTYPE_INT64, [1, 1 << 24]
        targets.sparse_csr.crow_indices = np.zeros(2, np.int64).tobytes()
    return request.SerializeToString()


OUT_OF_VOCABULARY = types.Datum(
    model_input=types.ModelInput.from_ints([10**9]), loss_fn_inputs={"target_tokens": [2]}
)


def test_every_bad_datum_is_refused_before_the_call_is_queued(held: Held) -> None:
    """The compute thread is held: a forward_backward that got queued would be answered
    with a future that never ends, not with a 400."""
    nan, inf = float("nan"), float("inf")
    budget = ServerLimits().max_loss_input_values
    cases = {
        f"at most {MAX_DATUMS} datums": forward_backward_body(
            held, [tokens_datum(1)] * (MAX_DATUMS + 1), "cross_entropy"
        ),
        "5000 tokens exceed this model's context length": forward_backward_body(
            held, [tokens_datum(5000)], "cross_entropy"
        ),
        "loss_fn_inputs['advantages'] contains NaN": forward_backward_body(
            held,
            [tokens_datum(3, logprobs=[-1.0] * 3, advantages=[1.0, nan, 1.0])],
            "importance_sampling",
        ),
        "loss_fn_inputs['logprobs'] contains NaN or infinite": forward_backward_body(
            held, [tokens_datum(3, logprobs=[-inf] * 3, advantages=[1.0] * 3)], "ppo"
        ),
        "datum 1: model_input tokens contains token id": forward_backward_body(
            held, [tokens_datum(2), OUT_OF_VOCABULARY], "cross_entropy"
        ),
        f"more than the {budget} of one call": sparse_body(held, budget // (1 << 24) + 1),
    }
    headers = {"Content-Type": "application/x-protobuf"}
    with http(held.server) as client:
        answers = {
            wanted: client.post("/api/v1/forward_backward", content=body, headers=headers)
            for wanted, body in cases.items()
        }
    wrong = [
        (wanted, answer.status_code, answer.text[:160])
        for wanted, answer in answers.items()
        if not (answer.status_code == 400 and wanted in answer.json()["error"])
    ]
    assert not wrong, wrong
