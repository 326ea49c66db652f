"""What ``--model`` names and where it is served: a base model, a ``tinker://`` checkpoint,
or a training run directory (its last checkpoint, served from the run's own ``server/``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_verifier.base.errors import UserError
from rl_verifier.parsing.config_input import read_config_file
from rl_verifier.train.backend import Connection, check_reachable, local_server
from rl_verifier.train.local_models import check_local_model
from rl_verifier.train.rundir import RunDir

CHECKPOINT_PREFIX = "tinker://"


@dataclass(frozen=True)
class ModelChoice:
    """``model_path`` (a checkpoint) or ``base_model`` is sampled; ``base_model`` is the
    tokenizer's model when known; ``server_dir`` holds a local run's checkpoints."""

    base_model: str | None
    model_path: str | None = None
    server_dir: Path | None = None


def resolve_model(model: str) -> ModelChoice:
    """Read ``--model``: a run directory (with ``checkpoints.jsonl``), a checkpoint path, or
    a base model name or directory."""
    if model.startswith(CHECKPOINT_PREFIX):
        return ModelChoice(None, model)
    path = Path(model).expanduser()
    if (path / "checkpoints.jsonl").is_file():
        run = RunDir(path)
        checkpoint = run.last_checkpoint()
        if checkpoint is None:
            raise UserError(f"{path}/checkpoints.jsonl lists no saved state yet")
        base = (
            read_config_file(run.config_file).get("base_model")
            if run.config_file.is_file()
            else None
        )
        server = path / "server"
        return ModelChoice(base, checkpoint["path"], server if server.is_dir() else None)
    if path.is_dir():
        return ModelChoice(os.path.abspath(path))
    return ModelChoice(model)


def check_model(choice: ModelChoice, base_url: str | None) -> None:
    """Refuse, before anything starts, a model the chosen backend cannot sample."""
    if base_url is not None:
        return
    if choice.base_model is None:
        raise UserError(
            f"--model {choice.model_path}: a tinker:// checkpoint needs --base-url (its "
            "server), or give the training run directory instead"
        )
    if choice.model_path is not None and choice.server_dir is None:
        raise UserError(
            f"--model {choice.model_path}: the run has no local server/ folder (a hosted run?): "
            "give --base-url"
        )
    check_local_model(choice.base_model)


@contextlib.contextmanager
def connect(choice: ModelChoice, base_url: str | None, out: Path) -> Iterator[Connection]:
    """The API to sample from: ``base_url``, or a local ``rlv serve`` for the block."""
    if base_url is not None:
        check_reachable(base_url)
        yield Connection(base_url, os.environ.get("TINKER_API_KEY", "tml-local"))
        return
    assert choice.base_model is not None  # check_model refused it otherwise
    data_dir = choice.server_dir or out / "server"
    with local_server(data_dir, choice.base_model, out / "server.log") as connection:
        yield connection


def tokenizer(client: Any, choice: ModelChoice, local: bool) -> Any:
    """The tokenizer for prompts: from this machine's files when they hold it (always, for a
    local server), else the SDK's. The SDK loads by hub id and asks the hub first, which
    offline costs two minutes of retries before it settles for the cached copy."""
    from transformers import AutoTokenizer

    if choice.base_model is not None:
        try:
            return AutoTokenizer.from_pretrained(choice.base_model, local_files_only=True)
        except OSError:
            if local:
                raise
    return client.get_tokenizer()


async def sampling_client(service: Any, choice: ModelChoice) -> Any:
    if choice.model_path is not None:
        return await service.create_sampling_client(model_path=choice.model_path)
    return await service.create_sampling_client(base_model=choice.base_model)
