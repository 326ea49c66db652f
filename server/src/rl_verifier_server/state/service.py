"""The server's state, independent of HTTP: what every Tinker call works on.

Torch work runs on one compute thread (``compute``), in submission order, sample requests
queued together as one batch (``batches``); a training
client's requests are submitted in ``seq_id`` order. Results go to the future table, from
which ``retrieve_future`` long-polls them. The calls themselves live in
``session_calls``, ``training_calls``, ``checkpoint_calls`` and ``sampling_calls``; each
checks a request before queueing any work, so a malformed or over-limit request is a user
error and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.checkpoints.downloads import UrlSigner
from rl_verifier_server.checkpoints.store import CheckpointStore
from rl_verifier_server.models.catalog import AllowedModels, ModelHosts
from rl_verifier_server.scheduling.compute import ComputeThread
from rl_verifier_server.scheduling.futures import FutureTable
from rl_verifier_server.scheduling.sample_batches import SampleBatches
from rl_verifier_server.state.sampler_table import SamplerTable
from rl_verifier_server.state.sessions import Sessions
from rl_verifier_server.state.stability import StabilityRecords
from rl_verifier_server.state.training_clients import TrainingClients


class Service:
    def __init__(
        self,
        data_dir: Path,
        device: str | None = None,
        *,
        limits: ServerLimits | None = None,
        models: AllowedModels | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits or ServerLimits()
        self.store = CheckpointStore(data_dir)
        self.hosts = ModelHosts(device, models, self.limits.batch_memory_gb)
        self.futures = FutureTable()
        self.compute = ComputeThread(self.futures)
        self.batches = SampleBatches(self.compute)
        self.sessions = Sessions(self.limits.session_timeout_s, clock)
        self.clients = TrainingClients(
            self.limits.max_training_clients, self.sessions, self.compute
        )
        self.samplers = SamplerTable(self.limits.max_samplers)
        self.stability = StabilityRecords()
        self.signer = UrlSigner()

    def close(self) -> None:
        self.compute.close()
