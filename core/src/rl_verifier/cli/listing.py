"""``rlv plugins`` and ``rlv verifiers``: what the installed plugins register."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import click
from pydantic import BaseModel

from rl_verifier.base.errors import UserError
from rl_verifier.cli.app import CommandGroup
from rl_verifier.discovery.plugins import KINDS, get_plugins


@click.command(epilog="Example: rlv plugins --json | jq '.[].task_sets'")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List plugins with what each registers (verifiers, task sets, environments, losses,
    sandbox backends, reward protocols, presets, commands) and why any failed to load."""
    group = click.get_current_context().find_root().command
    if isinstance(group, CommandGroup):  # so that each plugin's commands are recorded
        group.add_plugin_commands()
    listing = get_plugins().listing()
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    for plugin in listing:
        dist = f"{plugin['distribution']} {plugin['version']}" if plugin["distribution"] else ""
        click.echo(f"{plugin['name']:<16} {plugin['state']:<9} {dist}")
        for kind in KINDS:  # one line per kind of extension it registered
            if plugin[kind]:
                click.echo(f"    {kind.replace('_', ' ') + ':':<18} {', '.join(plugin[kind])}")
        for error in plugin["errors"]:
            click.echo(f"    error: {error}")


@click.command(epilog="Example: rlv verifiers --json | jq '.[] | {name, config}'")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with each config schema).")
def verifiers(as_json: bool) -> None:
    """List verifiers with each setting's type, default and description."""
    entries = []
    for _name, entry in get_plugins().registry.items():
        meta = entry.cls.metadata().model_dump(mode="json")
        with contextlib.suppress(UserError):  # settings with required keys: class range
            meta["reward_range"] = list(entry.cls().bounds())
        schema = entry.cls.Config.model_json_schema()
        entries.append({**meta, "plugin": entry.plugin, "version": entry.version, "config": schema})
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    for item in entries:
        click.echo(f"{item['name']}  ({item['plugin']} {item['version']})")
        click.echo(f"    {item['description']}")
        low, high = item["reward_range"]
        click.echo(f"    reward [{low}, {high}], timeout {item['default_timeout_s']}s")
        registration = get_plugins().registry.get(item["name"])
        for key, kind, default, description in setting_rows(registration.cls.Config):
            click.echo(f"    --config {key}=<{kind}>  {default}")
            if description:
                click.echo(f"        {description}")


def setting_rows(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key, type, default, description) for each setting; nested tables as a.b keys."""
    schema = model.model_json_schema()
    for key, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from setting_rows(info.annotation, f"{prefix}{key}.")
            continue
        if info.is_required():
            default = "required"
        else:
            value = info.get_default(call_default_factory=True)
            default = f"default {json.dumps(value, default=str)}"
        kind = schema_type(schema["properties"][key], schema)
        yield f"{prefix}{key}", kind, default, info.description or ""


def schema_type(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    """A short type name for one JSON-schema property: int, str|null, list[str], a|b ..."""
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return str(prop["const"])
    if "$ref" in prop:
        target = schema.get("$defs", {}).get(prop["$ref"].rsplit("/", 1)[-1], {})
        return schema_type(target, schema) if target else "object"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in prop:
            return "|".join(dict.fromkeys(schema_type(p, schema) for p in prop[key]))
    kind = prop.get("type")
    names = {"integer": "int", "number": "float", "string": "str", "boolean": "bool"}
    if kind == "array":
        items = prop.get("items")
        return f"list[{schema_type(items, schema)}]" if items else "list"
    if kind == "object":
        values = prop.get("additionalProperties")
        return f"dict[str, {schema_type(values, schema)}]" if isinstance(values, dict) else "dict"
    if kind == "null":
        return "null"
    return names.get(str(kind), str(kind or "any"))
