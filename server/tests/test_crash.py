"""SIGKILL in the middle of optim_step and save_state: after a restart, every listed
checkpoint loads, none is half-written, and an interrupted overwrite keeps the old one.

The server stops at a named point (``rl_verifier_server.base.testhooks``) and signals it, so the
kill lands inside the operation every time.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import tinker
from tinker import types

from rl_verifier_server.launch import LocalServer

PAUSE_TIMEOUT_S = 120.0


def start(data: Path, pause: str | None = None) -> LocalServer:
    env = {}
    if pause is not None:
        env = {"RLV_SERVE_TEST_PAUSE": pause, "RLV_SERVE_TEST_PAUSE_FILE": str(data / "paused")}
    server = LocalServer(data, log_path=data.parent / "server.log", env=env)
    server.start()
    return server


def kill_when_paused(server: LocalServer, data: Path) -> None:
    """Wait until the server reports it stopped at its pause point, then SIGKILL it."""
    assert server.process is not None
    deadline = time.monotonic() + PAUSE_TIMEOUT_S
    while not (data / "paused").exists():
        assert server.process.poll() is None, "the server exited before its pause point"
        assert time.monotonic() < deadline, "the server never reached its pause point"
        time.sleep(0.02)
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    (data / "paused").unlink()


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "checkpoint.json"}


@pytest.mark.slow
def test_checkpoints_survive_sigkill_mid_operation(tmp_path: Path, api_factory: Any) -> None:
    data = tmp_path / "data"
    data.mkdir()

    # 1. killed inside optim_step, after three checkpoints were saved
    server = start(data, pause="optim_step")
    api = api_factory(server.url, None)
    session = api.session()
    run = api.create_model(session, rank=2).value["model_id"]
    saves = [("save_weights", "a"), ("save_weights_for_sampler", "s"), ("save_weights", "b")]
    for route, name in saves:
        body = {"model_id": run, "seq_id": api.next_seq(run), "path": name}
        assert api.call(route, body).accepted
    step = {"learning_rate": 1e-2}
    api.post("optim_step", {"model_id": run, "seq_id": api.next_seq(run), "adam_params": step})
    kill_when_paused(server, data)
    b_folder = data / "runs" / run / "weights" / "b"
    b_before = files(b_folder)

    # 2. killed while overwriting "b": the old folder moved aside, the new one not yet in
    server = start(data, pause="save_state.swap@b")
    api = api_factory(server.url, None)
    assert api.create_model(session, rank=2).value["model_id"] == run  # the same run again
    load = {"model_id": run, "seq_id": api.next_seq(run), "path": f"tinker://{run}/weights/b"}
    assert api.call("load_weights", {**load, "optimizer": True}).accepted
    api.post("save_weights", {"model_id": run, "seq_id": api.next_seq(run), "path": "b",
                              "overwrite": True})  # fmt: skip
    kill_when_paused(server, data)
    assert not b_folder.exists()  # the kill landed in the swap window

    # 3. killed half-way through writing the files of a new checkpoint "c"
    server = start(data, pause="checkpoint.write")
    api = api_factory(server.url, None)
    assert api.create_model(session, rank=2).value["model_id"] == run
    api.post("save_weights", {"model_id": run, "seq_id": api.next_seq(run), "path": "c"})
    kill_when_paused(server, data)

    # 4. restarted: exactly the complete checkpoints are listed, and each one loads
    server = start(data)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0, 1.0]},
    )
    try:
        with tinker.ServiceClient(base_url=server.url, api_key="tml-local") as client:
            rest = tinker.RestClient(base_url=server.url, api_key="tml-local")
            listed = {c.tinker_path for c in rest.list_user_checkpoints().result().checkpoints}
            assert listed == {
                f"tinker://{run}/weights/a",
                f"tinker://{run}/sampler_weights/s",
                f"tinker://{run}/weights/b",
            }
            for path in sorted(listed):
                if "/sampler_weights/" in path:
                    sampler = client.create_sampling_client(model_path=path).result()
                    prompt = types.ModelInput.from_ints([1, 2])
                    assert sampler.sample(prompt, 1, types.SamplingParams(max_tokens=2)).result()
                else:
                    restored = client.create_training_client_from_state_with_optimizer(path)
                    assert restored.result().forward([datum], "cross_entropy").result()
        assert files(b_folder) == b_before  # the interrupted overwrite left the old "b"
        leftovers = [p for p in (data / "runs").rglob("*") if p.name.startswith(".")]
        assert leftovers == []
        assert not (data / "runs" / run / "weights" / "c").exists()
    finally:
        server.stop()
