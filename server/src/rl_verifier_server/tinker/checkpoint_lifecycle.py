"""A checkpoint's life after it is saved: deleted by its owner, expired by its TTL, and
exported weights downloaded through signed URLs.

Deleting (by request or at expiry) runs on the compute thread, after the work queued before
it. A sampler whose weights come from the checkpoint keeps working: its weights are held
in memory first (and spilled to the server's private folder if evicted later), then the
folder goes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from starlette.requests import Request

from rl_verifier import UserError
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.names import check_name
from rl_verifier_server.checkpoints.downloads import VALID_FOR
from rl_verifier_server.checkpoints.store import META, CheckpointRef, check_ttl
from rl_verifier_server.state.service import Service

log = logging.getLogger("rl_verifier_server")


def ref_of(request: Request) -> CheckpointRef:
    """The checkpoint a ``training_runs/RUN/checkpoints/KIND/NAME`` route names."""
    params = request.path_params
    return CheckpointRef.of(params["run_id"], params["kind"], params["name"])


def retire(service: Service, ref: CheckpointRef) -> None:
    """Delete a checkpoint without pulling it from under its samplers (compute thread)."""
    for sampler in service.samplers.using(ref.uri):
        if sampler.adapter is not None and sampler.host.snapshots.has(sampler.adapter):
            sampler.host.snapshots.detach(sampler.adapter)
    service.store.delete(ref)


async def delete(service: Service, ref: CheckpointRef) -> None:
    if not (service.store.directory(ref) / META).is_file():
        raise StatusError(f"no checkpoint at {ref.uri}", status=404)
    await service.compute.run(lambda: retire(service, ref))


def set_ttl(service: Service, ref: CheckpointRef, body: dict[str, Any]) -> None:
    if "ttl_seconds" not in body:
        raise UserError("the request needs 'ttl_seconds' (null to remove the expiry)")
    if not service.store.exists(ref):
        raise StatusError(f"no checkpoint at {ref.uri}", status=404)
    service.store.set_ttl(ref, check_ttl(body["ttl_seconds"]))


def expire(service: Service) -> int:
    """Delete the checkpoints whose TTL ran out (compute thread); how many."""
    refs = service.store.expired()
    for ref in refs:
        try:
            retire(service, ref)
            log.info("deleted %s: its TTL ran out", ref.uri)
        except (OSError, UserError) as exc:
            log.warning("could not delete expired checkpoint %s: %s", ref.uri, exc)
    return len(refs)


def sweep_soon(service: Service) -> None:
    """Queue the deletion of expired checkpoints, if there are any (listings call this, so
    what they leave out also leaves the disk)."""
    if service.store.expired():

        def run() -> None:
            expire(service)

        service.compute.later(run)


def download_urls(service: Service, ref: CheckpointRef, base_url: str) -> dict[str, Any]:
    """Signed URLs, one per file, of an ``external_weights`` checkpoint."""
    if ref.kind != "external_weights":
        raise UserError(f"{ref.uri} is not exported weights (tinker://RUN/external_weights/NAME)")
    if not service.store.exists(ref):
        raise StatusError(f"no checkpoint at {ref.uri}", status=404)
    now = service.store.now()
    folder = service.store.directory(ref)
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != META)
    sign = service.signer.sign
    urls = {name: sign(base_url, ref.run, ref.name, name, now) for name in files}
    return {"urls": urls, "expires": (now + VALID_FOR).isoformat()}


def download_path(service: Service, request: Request) -> Path:
    """The file a signed download URL names, once its signature checks out."""
    params = request.path_params
    run, name, file = params["run_id"], params["name"], params["file"]
    query = request.query_params
    service.signer.check(
        run, name, file, query.get("expires", ""), query.get("signature", ""), service.store.now()
    )
    ref = CheckpointRef.of(run, "external_weights", name)
    path = service.store.directory(ref) / check_name(file, "file name")
    if file == META or not service.store.exists(ref) or not path.is_file():
        raise StatusError(f"no file '{file}' in {ref.uri}", status=404)
    return path
