"""Malformed requests on every route (POST, PUT and DELETE): always a 4xx (or a user error),
never a 5xx.

Bodies: random bytes, truncated and mistyped JSON, deep nesting, bad UTF-8, zstd garbage,
and real request bodies (JSON and protobuf) truncated, bit-flipped and with each field
replaced by a wrong value. Afterwards the server still trains with the official SDK.
"""

from __future__ import annotations

import json
import random
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tinker
from starlette.routing import Route
from tinker import types
from tinker.proto import tinker_public_pb2 as pb

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.serving.app import build_app
from rl_verifier_server.state.service import Service

GARBAGE = [
    b"\xff\x00garbage",
    b"{",
    b'{"session_id": ',
    b"[" * 100_000,
    b'{"a": "\xff\xfe"}',
    b"[]",
    b'"text"',
    b"1e400",
    b"null",
    b"NaN",
]
WRONG_VALUES: list[Any] = [None, "", "..", "/etc", -1, 2**70, 1.5, True, [], {}, [1, "a"], "x" * 99]
PATH_VALUES = ["..", ".", "%2e%2e", "*", "[", "x" * 300, "s1:train:0", "a%00b"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("fuzz-data")
    limits = ["--max-tokens", "4", "--max-num-samples", "2", "--max-body-mb", "1"]
    with LocalServer(data, log_path=data.parent / "fuzz.log", extra_args=limits) as running:
        yield running


def routes(tmp_path: Path) -> list[tuple[str, list[str]]]:
    service = Service(tmp_path)
    try:
        found = [r for r in build_app(service).routes if isinstance(r, Route)]
        return [(r.path, sorted(r.methods or ())) for r in found]
    finally:
        service.close()


def seeds(api: Any, session: str, model_id: str, path: str) -> dict[str, dict[str, Any]]:
    """A real body per JSON route, with ids that exist on the server."""
    prompt = {"chunks": [{"type": "encoded_text", "tokens": [1, 2, 3]}]}
    return {
        "create_session": {"tags": [], "sdk_version": "0.38.0"},
        "session_heartbeat": {"session_id": session},
        "create_model": {
            "session_id": session,
            "model_seq_id": 100,
            "base_model": "rlv/tiny-chat",
            "lora_config": {"rank": 1, "seed": 0, "train_mlp": True},
            "optimizer_config": {"type": "adamw"},
        },
        "get_info": {"model_id": model_id},
        "optim_step": {"model_id": model_id, "seq_id": 0, "adam_params": {"learning_rate": 0.1}},
        "save_weights": {"model_id": model_id, "seq_id": 0, "path": "fuzz", "overwrite": True},
        "save_weights_for_sampler": {"model_id": model_id, "seq_id": 0, "path": "fuzz-s"},
        "load_weights": {"model_id": model_id, "seq_id": 0, "path": path, "optimizer": True},
        "create_sampling_session": {
            "session_id": session,
            "sampling_session_seq_id": 0,
            "model_path": path,
        },
        "asample": {
            "base_model": "rlv/tiny-chat",
            "num_samples": 1,
            "prompt": prompt,
            "sampling_params": {"max_tokens": 2, "temperature": 1.0, "stop": [], "seed": 1},
            "prompt_logprobs": True,
        },
        "retrieve_future": {"request_id": "0" * 32},
        "weights_info": {"tinker_path": path},
        "telemetry": {"events": []},
        "client/config": {"sdk_version": "0.38.0"},
    }


def forward_backward_body(model_id: str, seq_id: int) -> bytes:
    request = pb.ForwardBackwardRequest(model_id=model_id, seq_id=seq_id, loss_fn="cross_entropy")
    datum = request.data.add()
    chunk = datum.model_input.add()
    chunk.encoded_text.tokens = np.array([1, 2, 3], dtype=np.int32).tobytes()
    for name, values, dtype, code in [
        ("target_tokens", [2, 3, 4], np.int64, pb.DTYPE_INT64),
        ("weights", [1.0, 1.0, 1.0], np.float32, pb.DTYPE_FLOAT32),
    ]:
        tensor = datum.loss_fn_inputs[name]
        tensor.dtype = code
        tensor.shape.append(3)
        tensor.dense = np.array(values, dtype=dtype).tobytes()
    return bytes(request.SerializeToString())


def mutants(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The body with one field (top level or one level down) set to each wrong value."""
    for key, value in body.items():
        for wrong in WRONG_VALUES:
            yield {**body, key: wrong}
        if isinstance(value, dict):
            for inner in value:
                for wrong in WRONG_VALUES:
                    yield {**body, key: {**value, inner: wrong}}


def test_malformed_requests_on_every_route_get_4xx_and_the_server_keeps_serving(
    server: LocalServer, api_factory: Any, tmp_path: Path
) -> None:
    api = api_factory(server.url, None)
    session = api.session()
    model_id = api.create_model(session, rank=1).value["model_id"]
    saved = api.call("save_weights", {"model_id": model_id, "seq_id": api.next_seq(model_id)})
    path = saved.value["path"]
    bodies = seeds(api, session, model_id, path)
    rng = random.Random(0)
    unexpected: list[str] = []

    def check(label: str, answer: Any, must_refuse: bool) -> None:
        bad = answer.status >= 500 or answer.category == "server"
        if bad or (must_refuse and not 400 <= answer.status < 500):
            unexpected.append(f"{label}: {answer.status} {answer.category} {answer.error}")

    def fresh_seq(body: dict[str, Any]) -> dict[str, Any]:
        """A new seq_id (or model_seq_id) unless that is the field being mutated."""
        if body.get("model_id") == model_id and body.get("seq_id") == 0:
            return {**body, "seq_id": api.next_seq(model_id)}
        if body.get("model_seq_id") == 100:
            return {**body, "model_seq_id": rng.randrange(1000, 10**9)}
        return body

    for route_path, methods in routes(tmp_path):
        route = route_path.removeprefix("/api/v1/").lstrip("/")
        concrete = [route]
        if "{" in route:
            concrete = [route.split("{")[0] + urllib.parse.quote(v, safe="") + route.split("}")[1]
                        for v in PATH_VALUES]  # fmt: skip
        for target in concrete:
            if "GET" in methods:
                for query in ("", "?offset=-1", "?limit=abc", "?offset=99999999999999999999"):
                    response = api.http.get(f"/api/v1/{target}{query}".replace("/api/v1//", "/"))
                    check(f"GET {target}{query}", api.settle(response), must_refuse=False)
            if "POST" not in methods:
                continue
            # healthz is open without a key, so it reads no body at all: any body is fine.
            refuse = target != "healthz"
            for body in GARBAGE + [rng.randbytes(rng.randrange(1, 300)) for _ in range(4)]:
                answer = api.settle(api.post(target, body))
                check(f"POST {target} {body[:20]!r}", answer, must_refuse=refuse)
            zstd = api.post(target, b"\x28\xb5\x2f\xfd garbage", {"Content-Encoding": "zstd"})
            check(f"POST {target} zstd", api.settle(zstd), must_refuse=refuse)
            seed = bodies.get(target)
            if seed is None:
                continue
            text = json.dumps(seed).encode()
            for cut in sorted({rng.randrange(1, len(text)) for _ in range(6)}):
                check(f"POST {target} cut {cut}", api.call(target, text[:cut]), must_refuse=True)
            for mutant in mutants(seed):
                answer = api.call(target, fresh_seq(mutant))
                check(f"POST {target} {json.dumps(mutant)[:160]}", answer, must_refuse=False)

    # PUT ttl on a real checkpoint, and DELETE of a missing one, with the same kinds of body
    # (a DELETE's body is ignored: it is answered 404).
    checkpoint = "training_runs/{}/checkpoints/{}".format(*path.split("://")[1].split("/", 1))
    ttl = json.dumps({"ttl_seconds": 7200}).encode()
    refused = GARBAGE + [rng.randbytes(rng.randrange(1, 300)) for _ in range(4)]
    refused += [ttl[:cut] for cut in range(1, len(ttl))]
    wrong = [json.dumps(m).encode() for m in mutants({"ttl_seconds": 7200})]
    absent = f"training_runs/{model_id}/checkpoints/weights/absent"
    sends = [("PUT", f"{checkpoint}/ttl", body, True) for body in refused]
    sends += [("PUT", f"{checkpoint}/ttl", body, False) for body in wrong]
    sends += [("DELETE", absent, body, True) for body in refused]
    for method, url, body, must_refuse in sends:
        response = api.http.request(method, f"/api/v1/{url}", content=body)
        check(f"{method} {url} {body[:40]!r}", api.settle(response), must_refuse)
    zstd = api.http.put(
        f"/api/v1/{checkpoint}/ttl",
        content=b"\x28\xb5\x2f\xfd junk",
        headers={"Content-Encoding": "zstd"},
    )
    check("PUT ttl zstd", api.settle(zstd), must_refuse=True)
    assert api.http.put(f"/api/v1/{checkpoint}/ttl", content=ttl).status_code == 200

    # A model whose requests all count as late (run at once, in arrival order): its first
    # request skipped far ahead, so bit flips in seq_id never wait for missing ones.
    fb_model = api.create_model(session, seq=1, rank=1).value["model_id"]
    assert api.call("forward_backward", forward_backward_body(fb_model, 1 << 20)).accepted
    proto = forward_backward_body(fb_model, 1)
    variants = [proto[:cut] for cut in range(1, len(proto), 7)]
    for seq in range(2, 62):
        flipped = bytearray(forward_backward_body(fb_model, seq))
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        variants.append(bytes(flipped))
    for body in variants:
        check(f"forward_backward {body.hex()[:60]}", api.call("forward_backward", body), False)
    assert not unexpected, "\n".join(unexpected[:20])

    with tinker.ServiceClient(base_url=server.url, api_key="tml-local") as client:
        training = client.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
        datum = types.Datum(
            model_input=types.ModelInput.from_ints([1, 2, 3]),
            loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0, 1.0]},
        )
        assert training.forward_backward([datum], "cross_entropy").result().metrics
        assert training.optim_step(types.AdamParams(learning_rate=1e-3)).result() is not None
