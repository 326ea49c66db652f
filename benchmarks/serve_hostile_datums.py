"""How ``rlv serve`` answers a hostile ``forward_backward`` body, and what it costs everyone
else.

Per case, starts ``rlv serve`` with the built-in ``rlv/tiny-chat`` (a fresh data directory,
so each peak is its own), creates a training client, and sends one body built with the
SDK's own protobuf messages: a million one-token datums, one datum of 16 million tokens, or
sparse target and weight tensors whose few bytes stand for 16 million values each. Until it
is answered, ``GET /healthz`` (needs only the event loop) and a one-token completion (needs
the compute thread too) are sent beside it, one after the other. Prints the answer (a
refused future's error, or the HTTP error), its wall time, the server's resident memory
before and after (``VmRSS``), its peak growth (``VmHWM``), and the longest each request
beside it took.

    .venv/bin/python benchmarks/serve_hostile_datums.py
    PYTHONPATH=OLD_CHECKOUT/server/src .venv/bin/python benchmarks/serve_hostile_datums.py
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
from tinker.proto import tinker_public_pb2 as pb

from rl_verifier_server.launch import LocalServer

KEY = "tml-benchmark-hostile-datums"
MODEL = "rlv/tiny-chat"
PROTO = "application/x-protobuf"


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def datum(tokens: np.ndarray, weights: pb.Tensor | None = None) -> pb.Datum:
    made = pb.Datum()
    made.model_input.add().encoded_text.tokens = tokens.astype(np.int32).tobytes()
    targets = made.loss_fn_inputs["target_tokens"]
    targets.dtype = pb.DTYPE_INT64
    targets.shape.extend([len(tokens)])
    targets.dense = np.ones(len(tokens), np.int64).tobytes()
    if weights is not None:
        made.loss_fn_inputs["weights"].CopyFrom(weights)
    return made


def repeated(one: pb.Datum, count: int, model_id: str) -> bytes:
    """A request of ``count`` copies of ``one``, written field by field (building a million
    messages in Python would take longer than the server's answer)."""
    field = pb.ForwardBackwardRequest.DESCRIPTOR.fields_by_name["data"].number
    encoded = one.SerializeToString()
    head = pb.ForwardBackwardRequest(model_id=model_id, seq_id=1, loss_fn="cross_entropy")
    return head.SerializeToString() + (_key(field) + _varint(len(encoded)) + encoded) * count


def _key(field: int) -> bytes:
    return _varint(field << 3 | 2)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def many_datums(model_id: str) -> bytes:
    return repeated(datum(np.ones(1)), 1_000_000, model_id)


def one_long_datum(model_id: str) -> bytes:
    return repeated(datum(np.ones(16_000_000)), 1, model_id)


def sparse(kind: int) -> pb.Tensor:
    """A [1, 2^24] tensor of zeros in CSR form: 16 bytes of row pointers, no values."""
    tensor = pb.Tensor(dtype=kind, shape=[1, 1 << 24])
    tensor.sparse_csr.crow_indices = np.zeros(2, np.int64).tobytes()
    return tensor


def sparse_inputs(model_id: str) -> bytes:
    one = datum(np.ones(1), sparse(pb.DTYPE_FLOAT32))
    one.loss_fn_inputs["target_tokens"].CopyFrom(sparse(pb.DTYPE_INT64))
    return repeated(one, 16, model_id)


CASES: dict[str, Callable[[str], bytes]] = {
    "1,000,000 one-token datums": many_datums,
    "one datum of 16,000,000 tokens": one_long_datum,
    "16 x sparse [1, 2^24] inputs": sparse_inputs,
}


def answer_of(client: httpx.Client, response: httpx.Response) -> str:
    """The HTTP error, or how the accepted future ended."""
    if response.status_code != 200:
        return f"{response.status_code} {response.text[:70]}"
    request_id = response.json()["request_id"]
    while True:
        polled = client.post("/api/v1/retrieve_future", json={"request_id": request_id})
        if polled.status_code == 408:
            continue
        if polled.headers.get("content-type", "").startswith(PROTO):
            return "accepted: computed, a result returned"
        return f"future {polled.text[:70]}"


def beside(client: httpx.Client, took: dict[str, float], done: threading.Event) -> None:
    """The longest ``healthz`` and one-token completion, sent in turn until ``done``."""
    body = {"model": MODEL, "prompt": "The", "max_tokens": 1}
    took.update(healthz=0.0, sample=0.0)
    while True:
        start = time.monotonic()
        client.get("/healthz").raise_for_status()
        took["healthz"] = max(took["healthz"], time.monotonic() - start)
        start = time.monotonic()
        client.post("/v1/completions", json=body).raise_for_status()
        took["sample"] = max(took["sample"], time.monotonic() - start)
        if done.wait(0.1):
            return


def run_case(make: Callable[[str], bytes]) -> str:
    with tempfile.TemporaryDirectory(prefix="rlv-hostile-datums-") as folder:
        data = Path(folder)
        server = LocalServer(data, log_path=data / "server.log", extra_args=["--api-key", KEY])
        headers = {"Authorization": f"Bearer {KEY}", "X-API-Key": KEY}
        with server, httpx.Client(base_url=server.url, headers=headers, timeout=600) as client:
            assert server.process is not None
            pid = server.process.pid
            session = client.post("/api/v1/create_session", json={"tags": []}).json()
            created = client.post(
                "/api/v1/create_model",
                json={"session_id": session["session_id"], "model_seq_id": 0,
                      "base_model": MODEL, "lora_config": {"rank": 1}},
            )  # fmt: skip
            model_id = answer_of(client, created).split('"model_id":"')[1].split('"')[0]
            finished = threading.Event()
            finished.set()
            beside(client, {}, finished)  # warm-up
            body = make(model_id)
            rss, peak = status_mb(pid, "VmRSS"), status_mb(pid, "VmHWM")
            took: dict[str, float] = {}
            finished.clear()
            other = threading.Thread(target=beside, args=(client, took, finished))
            other.start()
            start = time.monotonic()
            response = client.post(
                "/api/v1/forward_backward", content=body, headers={"Content-Type": PROTO}
            )
            answer = answer_of(client, response)
            wall = time.monotonic() - start
            finished.set()
            other.join()
            grown = max(0.0, status_mb(pid, "VmHWM") - peak)
            after = status_mb(pid, "VmRSS")
            return (
                f"{len(body) / 2**20:>7.1f} {wall:>7.2f} {rss:>6.0f} -> {after:>5.0f} "
                f"{grown:>9.0f} {took['healthz']:>9.2f} {took['sample']:>9.2f}  {answer}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="default: all")
    args = parser.parse_args()
    print(f"rlv serve with {MODEL}, a fresh server per case")
    print(f"{'case':32} {'body MB':>7} {'wall s':>7} {'RSS MB':>15} {'peak +MB':>9} "
          f"{'healthz s':>9} {'sample s':>9}  answer")  # fmt: skip
    for name in args.case or CASES:
        print(f"{name:32} {run_case(CASES[name])}", flush=True)


if __name__ == "__main__":
    main()
