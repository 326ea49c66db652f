"""A checkpoint's life through the real SDK: TTLs, deletion, expiry, samplers that outlive
their checkpoint, the run's ``user_metadata`` (also after a restart), and failed requests in
the server's log."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import tinker
from tinker import types

from rl_verifier_server.launch import LocalServer

MODEL = "rlv/tiny-chat"
PROMPT = types.ModelInput.from_ints([1, 20, 30, 2])
SEEDED = types.SamplingParams(max_tokens=6, temperature=1.0, seed=11, stop=[])
RESIDENT_SAMPLERS = 8  # sampler snapshots a model keeps in memory (ModelHost's default)


class Server:
    """``rlv serve`` whose expiry clock the test can move forward."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.clock_file = data.parent / "clock-shift"
        self.clock_file.write_text("0")
        self.log = data.parent / "server.log"
        env = {"RLV_SERVE_TEST_CLOCK_FILE": str(self.clock_file)}
        self.process = LocalServer(data, log_path=self.log, env=env)

    def start(self) -> tinker.ServiceClient:
        self.process.start()
        return tinker.ServiceClient(base_url=self.process.url, api_key="tml-local")

    def rest(self) -> tinker.RestClient:
        return tinker.RestClient(base_url=self.process.url, api_key="tml-local")

    def folder(self, path: str) -> Path:
        run, kind, name = path.removeprefix("tinker://").split("/")
        return self.data / "runs" / run / kind / name


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("lifecycle") / "data")
    yield running
    running.process.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[tinker.ServiceClient]:
    with server.start() as service_client:
        yield service_client


@pytest.fixture(scope="module")
def training(client: tinker.ServiceClient) -> tinker.TrainingClient:
    metadata = {"renderer_name": "qwen3_instruct", "owner": "lifecycle-test"}
    created = client.create_lora_training_client(MODEL, rank=2, seed=0, user_metadata=metadata)
    return created.result()


def listed(rest: tinker.RestClient, run: str) -> dict[str, types.Checkpoint]:
    return {c.tinker_path: c for c in rest.list_checkpoints(run).result().checkpoints}


def sample(sampler: tinker.SamplingClient) -> list[int]:
    return list(sampler.sample(PROMPT, 1, SEEDED).result().sequences[0].tokens)


def test_user_metadata_is_the_runs(
    server: Server, client: tinker.ServiceClient, training: tinker.TrainingClient
) -> None:
    rest = server.rest()
    run = rest.get_training_run(training.model_id).result()
    assert run.user_metadata == {"renderer_name": "qwen3_instruct", "owner": "lifecycle-test"}
    path = training.save_state("meta", user_metadata={"step": "1"}).result().path
    assert listed(rest, training.model_id)[path].user_metadata == {"step": "1"}
    assert rest.get_training_run_by_tinker_path(path).result().user_metadata == run.user_metadata
    resumed = client.create_training_client_from_state(path, user_metadata={"resumed": "yes"})
    again = rest.get_training_run(resumed.result().model_id).result()
    assert again.user_metadata == {"resumed": "yes"}


def test_ttls_set_expires_at_and_can_be_moved(
    server: Server, training: tinker.TrainingClient
) -> None:
    rest = server.rest()
    before = datetime.now(UTC)
    path = training.save_state("rolling", ttl_seconds=7200).result().path
    expires = listed(rest, training.model_id)[path].expires_at
    assert expires is not None
    assert before + timedelta(seconds=7200) <= expires <= datetime.now(UTC) + timedelta(hours=2)
    rest.set_checkpoint_ttl_from_tinker_path(path, 86400).result()
    assert listed(rest, training.model_id)[path].expires_at > expires  # type: ignore[operator]
    rest.set_checkpoint_ttl_from_tinker_path(path, None).result()
    assert listed(rest, training.model_id)[path].expires_at is None
    with pytest.raises(tinker.BadRequestError, match="ttl_seconds must be between"):
        training.save_state("too-short", ttl_seconds=60).result()


def test_a_deleted_checkpoint_is_gone_but_its_sampler_is_not(
    server: Server, client: tinker.ServiceClient, training: tinker.TrainingClient
) -> None:
    rest = server.rest()
    state = training.save_state("doomed").result().path
    weights = training.save_weights_for_sampler("doomed-sampler").result().path
    sampler = client.create_sampling_client(model_path=weights).result()
    tokens = sample(sampler)
    for path in (state, weights):
        rest.delete_checkpoint_from_tinker_path(path).result()
        assert path not in listed(rest, training.model_id)
        assert not server.folder(path).exists()
    for _ in range(RESIDENT_SAMPLERS):  # push it out of memory: it comes back from a spill
        training.save_weights_and_get_sampling_client().result()
    assert sample(sampler) == tokens  # the sampler still has the deleted weights
    with pytest.raises(tinker.NotFoundError):
        rest.delete_checkpoint_from_tinker_path(state).result()
    with pytest.raises(tinker.BadRequestError, match="no checkpoint"):
        client.create_training_client_from_state(state).result()
    route = f"/api/v1/training_runs/{training.model_id}/checkpoints/weights/doomed"
    assert f"WARNING DELETE {route} -> 404: no checkpoint at" in server.log.read_text()


def test_expired_checkpoints_leave_listings_then_disk(
    server: Server, client: tinker.ServiceClient, training: tinker.TrainingClient
) -> None:
    rest = server.rest()
    path = training.save_weights_for_sampler("short-lived", ttl_seconds=3600).result().path
    sampler = client.create_sampling_client(model_path=path).result()
    tokens = sample(sampler)
    server.clock_file.write_text(str(2 * 3600))
    try:
        assert path not in listed(rest, training.model_id)
        deadline = time.monotonic() + 60
        while server.folder(path).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not server.folder(path).exists()
        assert sample(sampler) == tokens
        with pytest.raises(tinker.BadRequestError, match="no checkpoint"):
            client.create_sampling_client(model_path=path).result()
    finally:
        server.clock_file.write_text("0")


def test_user_metadata_survives_a_restart(
    server: Server, training: tinker.TrainingClient, tmp_path: Path
) -> None:
    """A new server process on (a copy of) the data directory answers from disk."""
    run_id = training.model_id
    copy = tmp_path / "data"
    shutil.copytree(server.data, copy, ignore=shutil.ignore_patterns(".rlv-serve.lock"))
    with LocalServer(copy, log_path=tmp_path / "server.log") as restarted:
        rest = tinker.RestClient(base_url=restarted.url, api_key="tml-local")
        run = rest.get_training_run(run_id).result()
        assert run.user_metadata == {"renderer_name": "qwen3_instruct", "owner": "lifecycle-test"}
        assert run.base_model == MODEL and run.lora_rank == 2
