"""The official ``openai`` client against ``rlv serve``'s OpenAI-compatible routes: a base
model and a checkpoint trained through the tinker SDK, whole answers and streams, the
sampling options, usage counts, keys and limits."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
import tinker
from rlv_numerics import assert_float32_close
from tinker import types

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2
from rl_verifier_server.models.tiny_model import VOCAB_SIZE

MODEL = "rlv/tiny-chat"
KEY = "tml-openai-test"
HI = [{"role": "user", "content": "Say yes."}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("server-data")
    args = ["--api-key", KEY, "--max-num-samples", "4", "--max-tokens", "64"]
    with LocalServer(data, log_path=data / "server.log", extra_args=args) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: LocalServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)


@pytest.fixture(scope="module")
def checkpoint(server: LocalServer) -> Iterator[tuple[str, list[int], tinker.SamplingClient]]:
    """A sampler checkpoint trained a few cross-entropy steps, with the prompt it was
    trained on and the SDK's sampling client for it."""
    with tinker.ServiceClient(base_url=server.url, api_key=KEY) as service:
        training = service.create_lora_training_client(base_model=MODEL, rank=8, seed=0).result()
        tokenizer = training.get_tokenizer()
        text = tokenizer.apply_chat_template(HI, add_generation_prompt=True, tokenize=False)
        prompt = tokenizer.encode(text, add_special_tokens=False)
        target = tokenizer.encode("yes it is<|im_end|>", add_special_tokens=False)
        tokens = prompt + target
        weights = [0.0] * (len(prompt) - 1) + [1.0] * len(target)
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},
        )
        for _ in range(10):
            training.forward_backward([datum], "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=3e-3)).result()
        path = training.save_weights_for_sampler(name="openai").result().path
        yield path, prompt, service.create_sampling_client(model_path=path).result()


def test_models_lists_what_the_server_offers(client: openai.OpenAI) -> None:
    names = [m.id for m in client.models.list()]
    assert names[0] == MODEL


def test_chat_completion_with_n_and_usage(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model=MODEL, messages=HI, n=3, max_tokens=5, temperature=1.0, seed=4
    )  # type: ignore[call-overload]
    assert [c.index for c in answer.choices] == [0, 1, 2]
    assert all(c.message.role == "assistant" for c in answer.choices)
    assert all(c.finish_reason in ("stop", "length") for c in answer.choices)
    assert answer.usage is not None
    assert answer.usage.prompt_tokens > 0
    assert 3 <= answer.usage.completion_tokens <= 15
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert answer.model == MODEL and answer.id.startswith("chatcmpl-")


def test_max_tokens_ends_with_length(client: openai.OpenAI) -> None:
    answer = client.completions.create(model=MODEL, prompt="The", max_tokens=1, n=2, seed=1)
    assert [c.finish_reason for c in answer.choices] == ["length", "length"]
    assert answer.usage is not None and answer.usage.completion_tokens == 2


def test_a_seed_repeats_and_temperature_zero_is_greedy(client: openai.OpenAI) -> None:
    def texts(**options: object) -> list[str]:
        answer = client.chat.completions.create(
            model=MODEL, messages=HI, max_tokens=8, n=2, **options
        )  # type: ignore[call-overload]
        return [str(c.message.content) for c in answer.choices]

    assert texts(seed=11, temperature=1.0) == texts(seed=11, temperature=1.0)
    greedy = texts(temperature=0)
    assert greedy[0] == greedy[1] == texts(temperature=0, seed=5)[0]


def test_top_p_narrows_to_the_most_likely_token(client: openai.OpenAI) -> None:
    greedy = client.completions.create(model=MODEL, prompt="The", max_tokens=6, temperature=0)
    narrow = client.completions.create(
        model=MODEL, prompt="The", max_tokens=6, temperature=1.0, top_p=1e-6, seed=3
    )
    assert narrow.choices[0].text == greedy.choices[0].text


def test_chat_logprobs(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model=MODEL, messages=HI, max_tokens=6, temperature=0, logprobs=True, top_logprobs=3
    )
    choice = answer.choices[0]
    assert choice.logprobs is not None and choice.logprobs.content
    joined = "".join(t.token for t in choice.logprobs.content)
    assert joined == choice.message.content or "\ufffd" in joined  # a split character
    for entry in choice.logprobs.content:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        assert entry.bytes == list(entry.token.encode())
    # Greedy: the top logprob is the chosen token's, by log_softmax against logit -
    # logsumexp, the vocabulary's sum in two float32 orders. Its error follows the logits'
    # size, not the logprob's: scaled by 1 at least, for tokens of logprob near 0.
    chosen = [entry.logprob for entry in choice.logprobs.content]
    tops = [entry.top_logprobs[0].logprob for entry in choice.logprobs.content]
    scale = max(1.0, *(abs(lp) for lp in chosen))
    assert_float32_close(tops, chosen, terms=VOCAB_SIZE, scale=scale)


def test_completion_logprobs_and_offsets(client: openai.OpenAI) -> None:
    answer = client.completions.create(
        model=MODEL, prompt="The", max_tokens=5, temperature=0, logprobs=2
    )
    logprobs = answer.choices[0].logprobs
    assert logprobs is not None and logprobs.tokens and logprobs.token_logprobs
    assert logprobs.text_offset is not None and logprobs.top_logprobs is not None
    joined = "".join(logprobs.tokens)
    assert joined == answer.choices[0].text or "\ufffd" in joined  # a split character
    starts = [0]
    for token in logprobs.tokens[:-1]:
        starts.append(starts[-1] + len(token))
    assert logprobs.text_offset == starts
    assert all(len(top) <= 2 for top in logprobs.top_logprobs)


def test_stop_strings_end_the_text_before_them(client: openai.OpenAI) -> None:
    text, stop = greedy_text_and_a_letter(client)
    answer = client.completions.create(
        model=MODEL, prompt="The", max_tokens=40, temperature=0, stop=[stop, "never-seen"]
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.text == text[: text.index(stop)]


def test_a_list_of_prompts_gets_n_choices_each(client: openai.OpenAI) -> None:
    answer = client.completions.create(
        model=MODEL, prompt=["The", "A cat"], n=2, max_tokens=3, temperature=0
    )
    assert [c.index for c in answer.choices] == [0, 1, 2, 3]
    assert answer.choices[0].text == answer.choices[1].text
    tokens = client.completions.create(model=MODEL, prompt=[[5, 17, 42]], max_tokens=2)
    assert tokens.usage is not None and tokens.usage.prompt_tokens == 3


def test_streaming_gives_the_same_text_as_a_whole_answer(client: openai.OpenAI) -> None:
    options = {"model": MODEL, "messages": HI, "max_tokens": 12, "n": 2, "seed": 9}
    whole = client.chat.completions.create(**options)  # type: ignore[call-overload]
    pieces: dict[int, str] = {0: "", 1: ""}
    reasons: dict[int, str | None] = {}
    usage = None
    for chunk in client.chat.completions.create(
        **options, stream=True, stream_options={"include_usage": True}
    ):  # type: ignore[call-overload]
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces[choice.index] += choice.delta.content or ""
            if choice.finish_reason is not None:
                reasons[choice.index] = choice.finish_reason
    assert pieces == {c.index: c.message.content for c in whole.choices}
    assert reasons == {c.index: c.finish_reason for c in whole.choices}
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens


def test_streamed_completion_with_stop(client: openai.OpenAI) -> None:
    text, stop = greedy_text_and_a_letter(client)
    stream = client.completions.create(
        model=MODEL, prompt="The", max_tokens=40, temperature=0, stop=stop, stream=True
    )
    streamed = "".join(chunk.choices[0].text for chunk in stream if chunk.choices)
    assert streamed == text[: text.index(stop)]


def greedy_text_and_a_letter(client: openai.OpenAI) -> tuple[str, str]:
    """The greedy 40-token continuation of "The", and an ASCII letter it contains after
    its first few characters (a stop string it will meet)."""
    text = (
        client.completions.create(model=MODEL, prompt="The", max_tokens=40, temperature=0)
        .choices[0]
        .text
    )
    return text, next(ch for ch in text[3:] if ch.isascii() and ch.isalpha())


def test_a_trained_checkpoint_by_its_tinker_path(
    client: openai.OpenAI, checkpoint: tuple[str, list[int], tinker.SamplingClient]
) -> None:
    """The checkpoint answers what it was trained to answer, token for token as the SDK's
    sampler of the same checkpoint does, and unlike the base model."""
    path, prompt, sampler = checkpoint
    answer = client.chat.completions.create(
        model=path, messages=HI, max_tokens=8, temperature=0, logprobs=True
    )
    choice = answer.choices[0]
    assert choice.message.content == "yes it is" and choice.finish_reason == "stop"
    sdk = sampler.sample(
        prompt=types.ModelInput.from_ints(prompt),
        num_samples=1,
        sampling_params=types.SamplingParams(max_tokens=8, temperature=0.0),
    ).result()
    assert choice.logprobs is not None
    sdk_lps = list(sdk.sequences[0].logprobs or [])[: len(choice.logprobs.content)]
    assert [t.logprob for t in choice.logprobs.content] == pytest.approx(sdk_lps, abs=1e-5)
    base = client.chat.completions.create(model=MODEL, messages=HI, max_tokens=8, temperature=0)
    assert base.choices[0].message.content != "yes it is"


def test_keys_are_required(server: LocalServer) -> None:
    wrong = openai.OpenAI(base_url=f"{server.url}/v1", api_key="tml-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model=MODEL, messages=HI, max_tokens=2)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"n": 5}, "'n'"),
        ({"max_tokens": 65}, "'max_tokens'"),
        ({"temperature": 3}, "'temperature'"),
        ({"top_p": 0}, "'top_p'"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "'stop'"),
        ({"top_logprobs": 2}, "'top_logprobs'"),
        ({"logprobs": True, "top_logprobs": 21}, "'top_logprobs'"),
        ({"frequency_penalty": 0.5}, "'frequency_penalty'"),
        ({"model": "no/such-model"}, "'model'"),
        ({"model": "tinker://nope:train:0/sampler_weights/x"}, "'model'"),
        ({"messages": []}, "'messages'"),
        ({"messages": [{"role": "user"}]}, "'messages[0]'"),
        ({"extra_body": {"mystery": 1}}, "'mystery'"),
    ],
)
def test_bad_requests_are_4xx_naming_the_field(
    client: openai.OpenAI, options: dict[str, object], field: str
) -> None:
    request: dict[str, object] = {"model": MODEL, "messages": HI, "max_tokens": 2, **options}
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(**request)  # type: ignore[call-overload]
    assert field in str(raised.value)


def test_streamed_errors_before_the_first_token_are_4xx(client: openai.OpenAI) -> None:
    long_prompt = [[7] * 2047]
    with pytest.raises(openai.BadRequestError, match="context length"):
        list(client.completions.create(model=MODEL, prompt=long_prompt, max_tokens=4, stream=True))


def test_concurrent_requests_get_what_they_get_alone(client: openai.OpenAI) -> None:
    """Sent together they are decoded as one batch: each seeded or greedy request gets the
    answer it gets alone, with its own limits and stop, and one that fails fails alone."""
    requests: list[dict[str, object]] = [
        {"messages": HI, "max_tokens": 12, "n": 2, "seed": 1},
        {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 3, "seed": 5},
        {"messages": HI, "max_tokens": 20, "seed": 2, "stop": ["e"]},
        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 9, "temperature": 0},
        {"messages": [{"role": "user", "content": "word " * 3000}], "max_tokens": 4},
    ]

    def ask(options: dict[str, object]) -> list[str] | str:
        try:
            answer = client.chat.completions.create(model=MODEL, **options)  # type: ignore[call-overload]
        except openai.BadRequestError as error:
            return str(error)
        return [f"{c.finish_reason}:{c.message.content}" for c in answer.choices]

    alone = [ask(options) for options in requests]
    with ThreadPoolExecutor(len(requests)) as pool:
        together = list(pool.map(ask, requests))
    assert together[:4] == alone[:4]
    assert "context length" in str(together[4])


@pytest.mark.skipif(not smollm2.is_available(), reason=smollm2.INSTALL_HINT)
def test_smollm2_answers_a_real_question(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model=smollm2.SMOLLM2_NAME,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=16,
        temperature=0,
    )
    choice = answer.choices[0]
    assert "Paris" in str(choice.message.content), choice.message.content
    assert choice.finish_reason == "stop"


def test_nothing_failed_on_the_server_but_what_the_tests_sent(server: LocalServer) -> None:
    assert server.log_path is not None
    log = Path(server.log_path).read_text()
    assert "Traceback" not in log and " 500" not in log


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("chat/completions", {"model": 5, "messages": HI}, "'model'"),
        ("chat/completions", {"model": MODEL, "messages": "hi"}, "'messages'"),
        ("chat/completions", {"model": MODEL, "messages": HI, "n": "2"}, "'n'"),
        ("chat/completions", {"model": MODEL, "messages": HI, "top_p": "x"}, "'top_p'"),
        ("chat/completions", {"model": MODEL, "messages": HI, "stream": 1}, "'stream'"),
        ("chat/completions", {"model": MODEL, "messages": [{"role": "user"}, 3]}, "'messages[0]'"),
        ("completions", {"model": MODEL, "prompt": []}, "'prompt'"),
        ("completions", {"model": MODEL, "prompt": [[1, -2]]}, "'prompt'"),
        ("completions", {"model": MODEL, "prompt": "x", "stop": 3}, "'stop'"),
        ("completions", {"model": MODEL, "prompt": "x", "logprobs": 6}, "'logprobs'"),
        ("completions", {"model": MODEL, "prompt": [[70000]]}, "vocabulary"),
    ],
)  # fmt: skip
def test_malformed_fields_are_400s_in_openais_shape(
    server: LocalServer, route: str, body: dict[str, object], field: str
) -> None:
    response = httpx.post(
        f"{server.url}/v1/{route}",
        json=body,
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=120,  # the first request may wait for the model to load
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert field in error["message"] and error["type"] == "invalid_request_error"
