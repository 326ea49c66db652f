"""The builder web app: every endpoint, bad input as JSON errors, preview == render_loop."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from rl_verifier.train.script_writer import BuildRequest, render_loop
from rl_verifier.web import app as web

MODEL = "rlv/tiny-chat"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(web.create_app(), raise_server_exceptions=False)


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").text == "ok"


def test_page_is_self_contained(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert "<script>" in response.text and "rlv builder" in response.text
    for remote in ("http://", "https://", "//cdn", "<link"):
        assert remote not in response.text


def test_options(client: TestClient) -> None:
    body = client.get("/api/options").json()
    names = [v["name"] for v in body["verifiers"]]
    assert "exact_match" in names
    first = body["verifiers"][0]
    assert {"name", "description", "plugin", "version", "config"} <= set(first)
    assert "properties" in first["config"] or first["config"].get("type") == "object"
    assert "Qwen/Qwen3-8B" in [m["name"] for m in body["catalog"]]
    assert "importance_sampling" in body["losses"] and body["backends"] == ["local", "tinker"]
    assert "single_turn" in body["environments"]
    for preset in body["presets"]:
        assert preset["values"]["verifier"] in names


def preset_requests() -> list[dict[str, Any]]:
    return [{**p["values"], "model": MODEL} for p in web.available_presets()]


@pytest.mark.parametrize("form", preset_requests(), ids=lambda f: str(f["verifier"]))
def test_render_matches_render_loop_for_each_preset(
    client: TestClient, form: dict[str, Any]
) -> None:
    form = {**form, "steps": 7}
    response = client.post("/api/render", json=form)
    assert response.status_code == 200, response.text
    script, config, warnings = render_loop(BuildRequest(**form))
    assert response.json() == {"script": script, "config": config, "warnings": warnings}


def test_presets_follow_installed_verifiers() -> None:
    titles = [p["title"] for p in web.available_presets()]
    assert "Reward sandboxed code that passes its tests" in titles  # pytest plugin is installed


def test_unknown_model_is_a_warning(client: TestClient) -> None:
    response = client.post(
        "/api/render", json={"verifier": "exact_match", "model": "Qwen/Qwen3-8Bx"}
    )
    assert response.status_code == 200
    assert "did you mean 'Qwen/Qwen3-8B'" in response.json()["warnings"][0]


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"rank": 0}, "rank"),
        ({"steps": "ten"}, "steps"),
        ({"steps": True}, "steps"),
        ({"group_size": 2.5}, "group_size"),
        ({"learning_rate": "fast"}, "learning_rate"),
        ({"learning_rate": -1}, "learning_rate"),
        ({"verifier": "nope"}, "verifier"),
        ({"verifier": 3}, "verifier"),
        ({"model": None}, "model"),
        ({"colour": "red"}, "colour"),
        ({"task": "taskset:missing"}, "task"),
        ({"task": "/no/such/file.jsonl"}, "task"),
        ({"environment": "nowhere", "max_turns": 2}, "environment"),
        ({"loss": "mse"}, "loss"),
        ({"backend": "gpu"}, "backend"),
        ({"output": "bad name!.py"}, "output"),
    ],
)
def test_bad_input_is_a_field_error(client: TestClient, form: dict[str, Any], field: str) -> None:
    response = client.post("/api/render", json={"verifier": "exact_match", "model": MODEL, **form})
    assert response.status_code == 422
    body = response.json()
    assert field in body["errors"], body
    assert "Traceback" not in response.text


@pytest.mark.parametrize("content", [b"{bad", b"[1, 2]", b"\xff\xfe", b""])
def test_malformed_body(client: TestClient, content: bytes) -> None:
    response = client.post("/api/render", content=content)
    assert response.status_code == 422
    assert "form" in response.json()["errors"]


def test_internal_error_hides_traceback(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(_: BuildRequest) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(web, "render_loop", boom)
    response = client.post("/api/render", json={"verifier": "exact_match", "model": MODEL})
    assert response.status_code == 500
    assert response.json() == {"error": "internal error"}
    assert "secret" not in response.text


@pytest.mark.parametrize("kind", ["script", "config"])
def test_download_post_and_get(client: TestClient, kind: str) -> None:
    form = {"verifier": "exact_match", "model": MODEL, "steps": 3, "backend": "local"}
    script, config, _ = render_loop(BuildRequest(**form))  # type: ignore[arg-type]
    expected = script if kind == "script" else config
    suffix = "py" if kind == "script" else "toml"
    posted = client.post(f"/api/download?kind={kind}", json=form)
    got = client.get("/api/download", params={"kind": kind, **form})
    for response in (posted, got):
        assert response.status_code == 200
        assert response.content == expected.encode()
        assert response.headers["content-disposition"] == (
            f'attachment; filename="train_exact_match.{suffix}"'
        )


def test_download_bad_input(client: TestClient) -> None:
    assert client.get("/api/download?kind=zip").status_code == 422
    response = client.get(
        "/api/download", params={"verifier": "exact_match", "model": MODEL, "rank": "0"}
    )
    assert response.status_code == 422 and "rank" in response.json()["errors"]


def test_cli_help() -> None:
    from click.testing import CliRunner

    from rl_verifier.cli.app import cli

    result = CliRunner().invoke(cli, ["builder", "--help"])
    assert result.exit_code == 0 and "--port" in result.output


def test_standalone_download_is_the_one_file_and_has_no_config(client: TestClient) -> None:
    form: dict[str, Any] = {"verifier": "exact_match", "model": MODEL, "standalone": True}
    script, _, _ = render_loop(BuildRequest(**form))  # type: ignore[arg-type]
    assert "forward_backward" in script
    posted = client.post("/api/download?kind=script", json=form)
    got = client.get("/api/download", params={"kind": "script", **form, "standalone": "true"})
    for response in (posted, got):
        assert response.status_code == 200 and response.content == script.encode()
    config = client.post("/api/download?kind=config", json=form)
    assert config.status_code == 422 and "no config" in config.json()["errors"]["kind"]
    bad = client.post("/api/render", json={**form, "standalone": "yes"})
    assert bad.json()["errors"] == {"standalone": "must be true or false"}
