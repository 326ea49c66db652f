"""``rlv serve`` against hostile input: text that is not Unicode, deep nesting, compressed
bodies, slow headers, signals; every route answers 4xx, memory stays bounded, the process
exits 0 on SIGTERM.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import zstandard
from rlv_processes import answers_to_slow_headers

from rl_verifier.cli_support import HEADER_TIMEOUT_S, url_for
from rl_verifier_server.launch import LocalServer
from rl_verifier_server.serving.app import ROUTES, V1

KEY = "tml-hostile-input-key"
OTHER_KEY = "tml-hostile-other-key"
SURROGATE = "\ud800"
NAMED_ROUTES = [
    "create_model", "get_info", "optim_step", "save_weights", "load_weights",
    "save_weights_external", "create_sampling_session", "session_heartbeat",
]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("hostile-data")
    args = ["--api-key", KEY, "--api-key", OTHER_KEY, "--max-body-mb", "8"]
    with LocalServer(data, log_path=data.parent / "hostile.log", extra_args=args) as running:
        yield running


def post(url: str, route: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}{V1}/{route}",
        content=content,
        headers={"X-API-Key": KEY, "Content-Type": "application/json", **headers},
        timeout=120,
    )


def raw_json(body: dict[str, Any]) -> bytes:
    """JSON as a Python client writes it: a lone surrogate becomes the escape ``\\ud800``."""
    return json.dumps(body).encode()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_text_that_is_not_unicode_is_a_400_naming_the_field(server: LocalServer) -> None:
    fields = {"model_id": SURROGATE, "session_id": SURROGATE, "base_model": SURROGATE}
    for route in NAMED_ROUTES:
        answer = post(server.url, route, raw_json({**fields, "seq_id": 0, "path": "x"}))
        assert answer.status_code == 400, (route, answer.status_code, answer.text)
        error = answer.json()["error"]
        assert "not valid Unicode" in error and any(f in error for f in fields), (route, error)
    # One more in a nested field and in a key.
    nested = post(server.url, "telemetry", raw_json({"events": [{"note": "a" + SURROGATE}]}))
    assert nested.status_code == 400 and "events[0].note" in nested.json()["error"]
    key = post(server.url, "telemetry", raw_json({"events": [{SURROGATE: 1}]}))
    assert key.status_code == 400 and "events[0]" in key.json()["error"]


def test_every_route_answers_hostile_bodies_with_a_4xx(server: LocalServer) -> None:
    deep: Any = "leaf"
    for _ in range(300):
        deep = {"a": deep}
    bodies = {
        "surrogate": raw_json({"model_id": SURROGATE, "session_id": SURROGATE}),
        "deep": raw_json({"model_id": deep}),
        "zstd surrogate": zstandard.ZstdCompressor().compress(raw_json({"x": SURROGATE})),
    }
    for path, methods, _ in ROUTES:
        url = server.url + path.format(
            run_id=SURROGATE, kind="weights", name="n", file="f", session_id="s", sampler_id="s"
        ).replace(SURROGATE, "%ED%A0%80")
        for method in methods:
            for name, body in bodies.items():
                headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
                if name.startswith("zstd"):
                    headers["Content-Encoding"] = "zstd"
                answer = httpx.request(method, url, content=body, headers=headers, timeout=120)
                assert answer.status_code < 500, (method, path, name, answer.text)
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_an_open_route_reads_no_body_and_a_bomb_stops_at_the_limit(server: LocalServer) -> None:
    assert server.process is not None
    pid = server.process.pid
    bomb = zstandard.ZstdCompressor().compress(b"[" + b"0," * (32 * 1024 * 1024) + b"0]")
    assert len(bomb) < 100_000  # 64 MiB of JSON in a small body
    before = rss_mb(pid)
    answer = httpx.post(
        f"{server.url}{V1}/healthz",  # open: no key needed, so its body is never read
        content=bomb,
        headers={"Content-Encoding": "zstd", "Content-Type": "application/json"},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    unauthenticated = httpx.post(
        f"{server.url}{V1}/telemetry", content=bomb, headers={"Content-Encoding": "zstd"}
    )
    assert unauthenticated.status_code == 401
    authenticated = post(server.url, "telemetry", bomb, **{"Content-Encoding": "zstd"})
    assert authenticated.status_code == 413, authenticated.text  # --max-body-mb 8
    grown = rss_mb(pid) - before
    assert grown < 100, f"the server grew by {grown:.0f} MiB on a bomb"


def test_connections_with_slow_headers_are_closed(server: LocalServer) -> None:
    address = urlsplit(server.url)
    start = b"POST /api/v1/telemetry HTT"  # and then nothing
    wait_s = HEADER_TIMEOUT_S * 4
    answers = answers_to_slow_headers(
        str(address.hostname), int(address.port or 0), start, 20, wait_s
    )
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), answers
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_one_key_sees_every_run_the_server_is_single_tenant(
    server: LocalServer, api_factory: Any
) -> None:
    """Documented choice (docs/serve.md, --help): keys are not tenants."""
    help_text = subprocess.run(
        [sys.executable, "-m", "rl_verifier_server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "single-tenant" in " ".join(help_text.split()).replace("- ", "-")
    assert "single-tenant" in (Path(__file__).parents[2] / "docs/serve.md").read_text()
    first, other = api_factory(server.url, KEY), api_factory(server.url, OTHER_KEY)
    created = first.create_model(first.session())
    assert created.accepted, created.error
    run_id = created.value["model_id"]
    listed = other.http.get("/api/v1/training_runs").json()
    assert run_id in json.dumps(listed)  # the other key sees the first key's run


def test_sigterm_ends_serve_with_status_0_and_ipv6_urls_are_bracketed(tmp_path: Path) -> None:
    assert url_for("::1", 8000) == "http://[::1]:8000"
    assert url_for("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    host = "::1" if socket.has_ipv6 and _can_bind_ipv6() else "127.0.0.1"
    process = subprocess.Popen(
        [sys.executable, "-m", "rl_verifier_server", "--host", host, "--port", "0",
         "--data-dir", str(tmp_path / "data"), "--preload", ""],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "listening on http://" in line, line
        if host == "::1":
            assert "http://[::1]:" in line, line
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _can_bind_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False
