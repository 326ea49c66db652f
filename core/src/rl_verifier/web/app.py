"""The builder's Starlette app: options, a byte-exact preview of ``rlv new``, downloads.

Every response is JSON or the static page; errors never carry a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from rl_verifier.base.contracts import task_set_name
from rl_verifier.base.errors import UserError
from rl_verifier.discovery.losses import policy_losses
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.train.catalog import CATALOG
from rl_verifier.train.script_writer import (
    BACKENDS,
    BuildError,
    BuildRequest,
    render_loop,
    request_defaults,
    script_path,
)

log = logging.getLogger("rl_verifier.web")

INT_FIELDS = ("rank", "steps", "group_size", "groups_per_step", "max_turns")
STR_FIELDS = ("verifier", "model", "loss", "backend", "environment")
OPTIONAL_STR = ("task", "output")
BOOL_FIELDS = ("standalone",)
FIELDS = (*STR_FIELDS, *OPTIONAL_STR, *INT_FIELDS, *BOOL_FIELDS, "learning_rate")


DEFAULT_MODEL = "Qwen/Qwen3-4B-Instruct-2507"


class FormError(Exception):
    """Field name -> message, answered as 422."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(errors)
        self.errors = errors


def available_presets() -> list[dict[str, Any]]:
    """The presets plugins register whose verifier, task set and environment exist."""
    plugins = get_plugins()
    out = []
    for preset in plugins.presets.values():
        task_set = task_set_name(preset.task) if preset.task else None
        task_ok = preset.task is None or task_set is None or task_set in plugins.task_sets
        if (
            preset.verifier in plugins.verifiers
            and task_ok
            and preset.environment in plugins.environments
        ):
            out.append(
                {
                    "title": preset.title,
                    "values": {
                        "verifier": preset.verifier,
                        "task": preset.task,
                        "environment": preset.environment,
                        "max_turns": preset.max_turns,
                    },
                }
            )
    return out


def options() -> dict[str, Any]:
    """Everything the page offers: verifiers with schemas, task sets, models, presets."""
    plugins = get_plugins()
    verifiers = []
    for name, entry in plugins.registry.items():
        meta = entry.cls.metadata()
        verifiers.append(
            {
                "name": name,
                "description": meta.description,
                "plugin": entry.plugin,
                "version": entry.version,
                "config": entry.cls.Config.model_json_schema(),
            }
        )
    return {
        "verifiers": verifiers,
        "task_sets": [
            {"name": n, "plugin": v.plugin} for n, v in plugins.task_sets.items()
        ],
        "catalog": [
            {
                "name": e.name,
                "family": e.family,
                "learning_rate": e.learning_rate,
                "backends": list(e.backends),
                "note": e.note,
            }
            for e in CATALOG
        ],
        "losses": list(policy_losses()),
        "backends": list(BACKENDS),
        "environments": plugins.environments.names(),
        "presets": available_presets(),
        "defaults": {
            "model": DEFAULT_MODEL,
            **{k: v for k, v in request_defaults().items() if k in FIELDS},
        },
    }


def parse_form(data: Any) -> BuildRequest:
    """Check types and ranges of a JSON form; raise FormError with per-field messages."""
    if not isinstance(data, dict):
        raise FormError({"form": "expected a JSON object"})
    errors: dict[str, str] = {}
    for key in data:
        if key not in FIELDS:
            errors[str(key)] = f"unknown field '{key}'"
    values: dict[str, Any] = {}
    for key in STR_FIELDS:
        value = data.get(key)
        if key in ("verifier", "model") and value is None:
            errors[key] = "required"
        elif value is not None and not isinstance(value, str):
            errors[key] = "must be text"
        elif value is not None:
            values[key] = value
    for key in OPTIONAL_STR:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            errors[key] = "must be text"
        elif value:
            values[key] = Path(value) if key == "output" else value
    for key in INT_FIELDS:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            errors[key] = "must be a whole number"
        elif value < 1:
            errors[key] = "must be at least 1"
        else:
            values[key] = value
    for key in BOOL_FIELDS:
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            errors[key] = "must be true or false"
        elif value is not None:
            values[key] = value
    rate = data.get("learning_rate")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            errors["learning_rate"] = "must be a number"
        elif not rate > 0 or rate == float("inf"):
            errors["learning_rate"] = "must be a positive number"
        else:
            values["learning_rate"] = float(rate)
    verifier = values.get("verifier")
    if verifier is not None and "verifier" not in errors:
        known = {name for name, _ in get_plugins().registry.items()}
        if verifier.strip() not in known and not any(ch in verifier for ch in "*+-"):
            errors["verifier"] = f"unknown verifier '{verifier}'"
    if errors:
        raise FormError(errors)
    return BuildRequest(**values)


def render(data: Any) -> tuple[BuildRequest, str, str, list[str]]:
    """Parse and render; a UserError becomes a FormError on the field it names."""
    request = parse_form(data)
    try:
        script, config, warnings = render_loop(request)
    except BuildError as exc:
        raise FormError({exc.field: str(exc)}) from None
    except UserError as exc:
        raise FormError({"form": str(exc)}) from None
    return request, script, config, warnings


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise FormError({"form": "malformed JSON"}) from None


def _query_form(request: Request) -> dict[str, Any]:
    """A GET download's form: query strings, with numbers converted where they parse."""
    data: dict[str, Any] = {}
    for key, value in request.query_params.items():
        if key == "kind":
            continue
        if key in BOOL_FIELDS and value in ("true", "false"):
            data[key] = value == "true"
            continue
        if key in INT_FIELDS:
            with contextlib.suppress(ValueError):
                data[key] = int(value)
                continue
        if key == "learning_rate":
            if value == "":
                continue
            with contextlib.suppress(ValueError):
                data[key] = float(value)
                continue
        data[key] = value
    return data


async def page(_: Request) -> Response:
    """The single page (inline CSS and JS)."""
    text = resources.files("rl_verifier.web").joinpath("static/index.html").read_text("utf-8")
    return HTMLResponse(text, headers={"Cache-Control": "no-store"})


async def api_options(_: Request) -> Response:
    """Verifiers, task sets, catalogue, losses, backends, environments, presets."""
    return JSONResponse(options())


async def api_render(request: Request) -> Response:
    """POST a form as JSON; answer {script, config, warnings} or 422 {errors}."""
    _, script, config, warnings = render(await _json_body(request))
    return JSONResponse({"script": script, "config": config, "warnings": warnings})


async def api_download(request: Request) -> Response:
    """The exact loop file (kind=script) or its TOML (kind=config) as an attachment; a
    standalone loop has no TOML."""
    kind = request.query_params.get("kind", "script")
    if kind not in ("script", "config"):
        raise FormError({"kind": "kind must be script or config"})
    data = await _json_body(request) if request.method == "POST" else _query_form(request)
    build, script, config, _ = render(data)
    if kind == "config" and build.standalone:
        raise FormError({"kind": "a standalone loop is one file: it has no config"})
    path = script_path(build)
    name = path.name if kind == "script" else path.with_suffix(".toml").name
    media = "text/x-python" if kind == "script" else "application/toml"
    return Response(
        script if kind == "script" else config,
        media_type=f"{media}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def healthz(_: Request) -> Response:
    """Liveness."""
    return PlainTextResponse("ok")


def _guard(handler: Any) -> Any:
    """Answer FormError as 422 and anything unexpected as a logged, traceback-free 500."""

    async def wrapped(request: Request) -> Response:
        try:
            response: Response = await handler(request)
            return response
        except FormError as exc:
            return JSONResponse({"errors": exc.errors}, status_code=422)
        except Exception:
            log.exception("builder request failed: %s %s", request.method, request.url.path)
            return JSONResponse({"error": "internal error"}, status_code=500)

    wrapped.__doc__ = handler.__doc__
    return wrapped


def create_app() -> Starlette:
    """The builder app."""
    routes = [
        Route("/", _guard(page), methods=["GET"]),
        Route("/api/options", _guard(api_options), methods=["GET"]),
        Route("/api/render", _guard(api_render), methods=["POST"]),
        Route("/api/download", _guard(api_download), methods=["GET", "POST"]),
        Route("/healthz", _guard(healthz), methods=["GET"]),
    ]
    return Starlette(routes=routes)


def serve(port: int = 8765, announce: Callable[[int], None] | None = None) -> None:
    """Serve on 127.0.0.1 only; the port is bound (or refused) before ``announce(port)``."""
    import uvicorn

    from rl_verifier.serving.listen import bind_listener

    sock = bind_listener("127.0.0.1", port, "rlv builder")
    if announce is not None:
        announce(sock.getsockname()[1])
    config = uvicorn.Config(create_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
