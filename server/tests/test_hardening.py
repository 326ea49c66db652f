"""``rlv serve`` against a hostile client: names and paths, base models, keys, limits.

One server with API keys, a --models-dir, an operator-preloaded model directory and
small limits; the official SDK where it can make the call, raw HTTP where it would refuse
the input itself.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tinker
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tinker import types

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models.tiny_model import ensure_tiny_model

KEY = "tml-hardening-first-key"
ENV_KEY = "tml-hardening-second-key"
LIMITS = [
    "--max-tokens", "16", "--max-num-samples", "4", "--max-samplers", "3",
    "--max-training-clients", "12", "--max-body-mb", "1",
]  # fmt: skip


@dataclass
class Hardened:
    server: LocalServer
    root: Path  # everything the server may touch, and the files it must not
    data: Path
    preloaded: Path  # a model directory outside --models-dir, preloaded by the operator
    api: Any  # conftest.Api with KEY


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): relative path -> a fingerprint that
    changes when the entry is written, replaced or retyped."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            kind = "dir" if path.is_dir() and not path.is_symlink() else "file"
            found[path.relative_to(root).as_posix()] = (
                f"{kind}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
            )
    return found


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory, api_factory: Any) -> Iterator[Hardened]:
    root = tmp_path_factory.mktemp("hardened")
    tiny = ensure_tiny_model()
    models = root / "models"
    shutil.copytree(tiny, models / "tiny")
    (models / "no-config").mkdir()
    os.symlink(tiny, models / "escape")  # a link out of --models-dir is not under it
    preloaded = root / "operator-model"
    shutil.copytree(tiny, preloaded)
    (root / "secret.txt").write_text("not for clients")
    data = root / "data"
    data.mkdir()
    (data / "keep.txt").write_text("the operator's file")
    args = ["--api-key", KEY, "--models-dir", str(models), *LIMITS]
    server = LocalServer(
        data,
        preload=("rlv/tiny-chat", str(preloaded)),
        log_path=tmp_path_factory.mktemp("logs") / "server.log",
        extra_args=args,
        env={"RLV_SERVE_API_KEYS": f" {ENV_KEY} ,"},
    )
    with server:
        yield Hardened(server, root, data, preloaded, api_factory(server.url, KEY))


@pytest.fixture(scope="module")
def sdk(hardened: Hardened) -> Iterator[tinker.ServiceClient]:
    with tinker.ServiceClient(base_url=hardened.server.url, api_key=KEY) as client:
        yield client


def tiny_datum() -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0, 1.0]},
    )


# Names ------------------------------------------------------------------------------------


def test_dot_names_cannot_replace_a_runs_checkpoints(
    hardened: Hardened, sdk: tinker.ServiceClient
) -> None:
    training = sdk.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
    first = training.save_state("step-10").result().path
    second = training.save_state("step-20").result().path
    before = tree(hardened.root)
    for name in (".", "..", "", "x" * 129, ".step-10"):
        with pytest.raises(tinker.BadRequestError) as refused:
            training.save_state(name).result()
        assert "checkpoint name" in str(refused.value)
    with pytest.raises(tinker.BadRequestError, match="checkpoint name"):
        training.save_weights_for_sampler("..").result()
    assert tree(hardened.root) == before
    rest = tinker.RestClient(base_url=hardened.server.url, api_key=KEY)
    run = first.split("/")[2]
    assert {c.tinker_path for c in rest.list_checkpoints(run).result().checkpoints} == {
        first,
        second,
    }
    restored = sdk.create_training_client_from_state_with_optimizer(first).result()
    assert restored.forward([tiny_datum()], "cross_entropy").result().loss_fn_outputs
    # the refused calls gave up their place in line: the next call runs at once
    assert training.save_state("step-30").result().path.endswith("/weights/step-30")


NAMES = st.one_of(
    st.sampled_from(
        [
            ".", "..", "", "...", "./x", "../x", "..\\x", "/", "/etc", "~", "%2e%2e",
            "a/..", "x" * 128, "x" * 129, "existing", "other", ".existing.old-0000aaaa",
            ".existing.tmp-0000aaaa", "weights", "runs", "\x00", " ", "é",
        ]
    ),
    st.text(alphabet="._-:/\\ ~aZ09%é\x00", max_size=10),
)  # fmt: skip
KINDS = st.sampled_from(["weights", "sampler_weights", "external_weights", "..", ".", ""])


def encoded(component: str) -> str:
    """A URL path component with every byte but letters, digits, ``-_:`` percent-encoded (dots
    too, so the client does not fold ``.``/``..`` away before the server sees them)."""
    return urllib.parse.quote(component, safe=":").replace(".", "%2E")


@dataclass
class Arena:
    """A training client with checkpoints the property test must never lose."""

    model_id: str
    session: str
    protected: dict[str, dict[str, str]]  # checkpoint folder -> its files' hashes


@pytest.fixture(scope="module")
def arena(hardened: Hardened) -> Arena:
    api = hardened.api
    session = api.session()
    model_id = api.create_model(session).value["model_id"]
    for route, name in [("save_weights", "existing"), ("save_weights_for_sampler", "other")]:
        body = {"model_id": model_id, "seq_id": api.next_seq(model_id), "path": name}
        assert api.call(route, body).accepted
    return Arena(model_id, session, {})


def checkpoint_files(snapshot: dict[str, str]) -> dict[str, dict[str, str]]:
    """Complete checkpoints in a tree snapshot: folder -> {file: hash}."""
    folders = {p.rsplit("/", 1)[0] for p in snapshot if p.endswith("/checkpoint.json")}
    return {
        folder: {p: h for p, h in snapshot.items() if p.startswith(folder + "/")}
        for folder in folders
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=NAMES, run=st.one_of(st.just("MODEL"), NAMES), kind=KINDS, overwrite=st.booleans())
def test_no_call_touches_anything_but_the_one_checkpoint_it_names(
    hardened: Hardened, arena: Arena, name: str, run: str, kind: str, overwrite: bool
) -> None:
    api = hardened.api
    run = arena.model_id if run == "MODEL" else run
    path = f"tinker://{run}/{kind}/{name}"
    named = f"data/runs/{run}/{kind}/{name}"
    checkpoint = "/".join(
        ["training_runs", encoded(run), "checkpoints", encoded(kind), encoded(name)]
    )
    calls: list[tuple[str, dict[str, Any], str | None]] = [
        # (route, body, the folder it may write: runs/RUN/KIND/NAME)
        (
            "save_weights",
            {"model_id": arena.model_id, "path": name, "overwrite": overwrite},
            f"data/runs/{arena.model_id}/weights/{name}",
        ),
        (
            "save_weights_for_sampler",
            {"model_id": arena.model_id, "path": name},
            f"data/runs/{arena.model_id}/sampler_weights/{name}",
        ),
        (
            "save_weights_external",
            {"model_id": arena.model_id, "path": name},
            f"data/runs/{arena.model_id}/external_weights/{name}",
        ),
        ("load_weights", {"model_id": arena.model_id, "path": path, "optimizer": True}, None),
        ("weights_info", {"tinker_path": path}, None),
        ("create_sampling_session", {"session_id": arena.session, "model_path": path}, None),
        (
            "asample",
            {
                "model_path": path,
                "prompt": {"chunks": [{"type": "encoded_text", "tokens": [1, 2]}]},
                "sampling_params": {"max_tokens": 1},
            },
            None,
        ),
        ("create_model", {"session_id": name, "model_seq_id": 0, "base_model": "x"}, None),
        ("create_model", {"session_id": run, "model_seq_id": 0, "base_model": name}, None),
        ("PUT " + checkpoint + "/ttl", {"ttl_seconds": 10**6}, named),
        ("DELETE " + checkpoint, {}, named),  # last: it may remove the one checkpoint named
    ]
    for route, body, target in calls:
        if "model_id" in body:
            body["seq_id"] = api.next_seq(arena.model_id)
        before = tree(hardened.root)
        if " " in route:
            method, url = route.split(" ", 1)
            content = json.dumps(body).encode() if body else None
            answer = api.settle(api.http.request(method, f"/api/v1/{url}", content=content))
        else:
            answer = api.call(route, body)
        after = tree(hardened.root)
        assert answer.status < 500 and answer.category != "server", (route, body, answer)
        moved = changed(before, after)
        if target is not None and answer.accepted:
            if route.startswith("save"):
                assert answer.value["path"] == f"tinker://{target.split('/', 2)[2]}"
            # the checkpoint's folder and files, and the folders above it (a new entry)
            assert all(
                p == target or p.startswith(target + "/") or target.startswith(p + "/")
                for p in moved
            ), sorted(moved)
        else:
            assert not moved, (route, body, moved)
        # every complete checkpoint is still there, unchanged unless it is the one named
        for folder, files in checkpoint_files(before).items():
            if folder != target:
                assert {p: after.get(p) for p in files} == files, (route, body, folder)
    for route in (f"training_runs/{run}", f"training_runs/{run}/checkpoints"):
        response = api.http.get("/api/v1/" + urllib.parse.quote(route, safe="/:"))
        assert response.status_code < 500
    runs = hardened.data / "runs" / arena.model_id
    for route, folder, name in [
        ("save_weights", "weights", "existing"),
        ("save_weights_for_sampler", "sampler_weights", "other"),
    ]:  # a checkpoint the DELETE above removed (the one it named) comes back for the next run
        if not (runs / folder / name / "checkpoint.json").exists():
            body = {"model_id": arena.model_id, "seq_id": api.next_seq(arena.model_id)}
            assert api.call(route, {**body, "path": name}).accepted


# Base models ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base", ["/etc", "/root", "../../etc", "tiny/../../..", "escape", "no-config", "models/tiny"]
)
def test_clients_cannot_load_an_arbitrary_server_directory(hardened: Hardened, base: str) -> None:
    api = hardened.api
    answer = api.create_model(api.session(), base=base)
    assert answer.status == 400
    assert "built-in models (rlv/tiny-chat" in str(answer.error)
    assert f"models this server preloaded ({hardened.preloaded})" in str(answer.error)
    assert "model directories under --models-dir" in str(answer.error)


def test_models_dir_and_operator_preloaded_models_are_served(
    hardened: Hardened, sdk: tinker.ServiceClient
) -> None:
    for base in ("tiny", str(hardened.root / "models" / "tiny"), str(hardened.preloaded)):
        training = sdk.create_lora_training_client(base_model=base, rank=2).result()
        assert training.forward([tiny_datum()], "cross_entropy").result().loss_fn_outputs
    with pytest.raises(tinker.BadRequestError, match="unknown base model"):
        sdk.create_lora_training_client(base_model=str(hardened.preloaded.parent), rank=2).result()


# Keys -------------------------------------------------------------------------------------


def test_the_sdk_key_header_is_what_is_checked(hardened: Hardened, api_factory: Any) -> None:
    with tinker.ServiceClient(base_url=hardened.server.url, api_key=ENV_KEY) as from_env:
        from_env.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
    sessions = hardened.api.http.get("/api/v1/sessions").json()["sessions"]
    before = tree(hardened.root)
    wrong = tinker.ServiceClient(base_url=hardened.server.url, api_key="tml-not-this-one")
    with pytest.raises(tinker.AuthenticationError, match="API key is not valid"):
        wrong.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
    nameless = api_factory(hardened.server.url, None)
    for route, body in [
        ("create_session", {}),
        ("create_model", {"session_id": "s1", "model_seq_id": 0, "base_model": "rlv/tiny-chat"}),
        ("save_weights", {"model_id": "x", "seq_id": 1, "path": "y"}),
    ]:
        response = nameless.post(route, body)
        assert response.status_code == 401 and "no API key was sent" in response.text
    same_length = api_factory(hardened.server.url, KEY[:-1] + "X")
    assert same_length.post("create_session", {}).status_code == 401
    assert nameless.http.get("/api/v1/healthz").json()["status"] == "ok"
    assert hardened.api.http.get("/api/v1/sessions").json()["sessions"] == sessions
    assert tree(hardened.root) == before


# ServerLimits -----------------------------------------------------------------------------------


def test_request_bodies_over_the_limit_are_refused(hardened: Hardened) -> None:
    api = hardened.api
    big = b'{"pad": "' + b"x" * (1 << 20) + b'"}'
    assert api.post("create_session", big).status_code == 413
    bomb = zstandard.ZstdCompressor().compress(big)
    response = api.post("create_session", bomb, headers={"Content-Encoding": "zstd"})
    assert response.status_code == 413 and "--max-body-mb" in response.text
    assert api.post("create_session", {}).status_code == 200


def test_sampling_beyond_the_limits_is_a_clear_user_error(sdk: tinker.ServiceClient) -> None:
    sampler = sdk.create_sampling_client(base_model="rlv/tiny-chat").result()
    prompt = types.ModelInput.from_ints([1, 2, 3])
    with pytest.raises(tinker.BadRequestError, match="--max-num-samples"):
        sampler.sample(prompt, 5, types.SamplingParams(max_tokens=4)).result()
    with pytest.raises(tinker.BadRequestError, match="--max-tokens"):
        sampler.sample(prompt, 1, types.SamplingParams(max_tokens=17)).result()
    out = sampler.sample(prompt, 4, types.SamplingParams(max_tokens=16, stop=[])).result()
    assert [len(s.tokens) for s in out.sequences] == [16] * 4


def test_training_clients_beyond_the_limit_wait_for_a_session_to_end(hardened: Hardened) -> None:
    api = hardened.api
    session = api.session()
    answers = []
    for seq in range(13):  # --max-training-clients 12, some already live
        answers.append(api.create_model(session, seq))
        if not answers[-1].accepted:
            break
    assert answers[-1].status == 429 and "--max-training-clients" in str(answers[-1].error)
    api.finish(session)
    assert api.create_model(api.session()).accepted


def test_the_least_recently_used_sampler_is_released_beyond_the_limit(
    sdk: tinker.ServiceClient,
) -> None:
    training = sdk.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
    samplers = [training.save_weights_and_get_sampling_client().result() for _ in range(4)]
    prompt = types.ModelInput.from_ints([1, 2])
    params = types.SamplingParams(max_tokens=2)
    with pytest.raises(tinker.BadRequestError, match="--max-samplers"):
        samplers[0].sample(prompt, 1, params).result()
    assert samplers[3].sample(prompt, 1, params).result().sequences


def test_a_finished_session_releases_its_clients(hardened: Hardened) -> None:
    api = hardened.api
    session = api.session()
    model_id = api.create_model(session).value["model_id"]
    api.finish(session)
    answer = api.call("save_weights", {"model_id": model_id, "seq_id": 1, "path": "late"})
    assert answer.status == 400 and "unknown training client" in str(answer.error)
    assert api.post("session_heartbeat", {"session_id": session}).status_code == 410
