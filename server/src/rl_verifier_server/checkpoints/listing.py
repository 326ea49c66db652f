"""The REST client's views: training runs and checkpoint details, from live clients and disk."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.names import check_name
from rl_verifier_server.checkpoints.store import KINDS, CheckpointRef, CheckpointStore

if TYPE_CHECKING:
    from rl_verifier_server.state.training_clients import TrainingClient


def training_run(
    store: CheckpointStore, clients: Mapping[str, TrainingClient], run_id: str
) -> dict[str, Any]:
    check_name(run_id, "training run id")
    client = clients.get(run_id)
    record = store.read_run(run_id) or {}
    checkpoints = store.listing(run_id)
    if client is None and not record and not checkpoints:
        raise StatusError(f"unknown training run '{run_id}'", status=404)
    if client is not None:
        base, rank, last = client.base_model, client.spec.rank, client.last_request_time
    elif record:
        base, rank = record["base_model"], record["lora"]["rank"]
        last = checkpoints[0]["time"] if checkpoints else record["created"]
    else:
        meta = store.read_meta(CheckpointRef.parse(checkpoints[0]["tinker_path"], KINDS))
        base, rank, last = meta["base_model"], meta["lora"]["rank"], checkpoints[0]["time"]
    training = [c for c in checkpoints if c["checkpoint_type"] == "training"]
    sampler = [c for c in checkpoints if c["checkpoint_type"] == "sampler"]
    return {
        "training_run_id": run_id,
        "base_model": base,
        "model_owner": "local",
        "is_lora": True,
        "lora_rank": rank,
        "corrupted": False,
        "last_request_time": last,
        "last_checkpoint": training[0] if training else None,
        "last_sampler_checkpoint": sampler[0] if sampler else None,
        "user_metadata": record.get("user_metadata"),
    }


def training_runs(
    store: CheckpointStore, clients: Mapping[str, TrainingClient]
) -> list[dict[str, Any]]:
    runs = set(clients)
    for run in store.run_ids():
        with contextlib.suppress(UserError):  # a folder no client could have named
            if store.read_run(run) is not None or store.listing(run):
                runs.add(run)
    return [training_run(store, clients, run) for run in sorted(runs)]


def weights_info(store: CheckpointStore, request: dict[str, Any]) -> dict[str, Any]:
    meta = store.read_meta(CheckpointRef.parse(request.get("tinker_path")))
    lora = meta["lora"]
    return {
        "base_model": meta["base_model"],
        "is_lora": True,
        "lora_rank": lora["rank"],
        "train_mlp": lora["train_mlp"],
        "train_attn": lora["train_attn"],
        "train_unembed": lora["train_unembed"],
    }
