"""``rlv new``'s script writer: a short, ready-to-run training script and its TOML.

``render_loop`` is pure (it reads the plugin registry and checks that a tasks file
exists, and writes nothing), so a preview shows exactly what ``write_loop`` writes.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from string import Template
from typing import Any

from rl_verifier.base.contracts import task_set_name
from rl_verifier.base.errors import UserError
from rl_verifier.discovery.losses import policy_loss_problem
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.files.atomic import write_files
from rl_verifier.scoring.resolve import (
    check_environment,
    check_task_source,
    example_task_set,
    reward_for,
    spec_names,
)
from rl_verifier.train.catalog import closest, lookup
from rl_verifier.train.config import TrainConfig, TrainingBackend
from rl_verifier.train.script_text import LINE_LENGTH, command, comments, doc_escape, wrap
from rl_verifier.train.standalone import render_standalone

BACKENDS = tuple(backend.value for backend in TrainingBackend)
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,56}\.py")  # short: it goes in commands
SAVE_EVERY = 10


class BuildError(UserError):
    """A request ``rlv new`` refuses; ``field`` names the request field it is about."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _trained(setting: str) -> Any:
    """The default of a ``TrainConfig`` setting: a request's default is the trainer's."""
    return TrainConfig.model_fields[setting].default


@dataclass
class BuildRequest:
    """What ``rlv new`` was asked for. ``verifier`` is a name or a reward spec. Defaults
    are ``TrainConfig``'s, but for ``backend``: a written script targets hosted Tinker."""

    verifier: str
    model: str
    task: str | None = None
    loss: str = _trained("loss")
    rank: int = _trained("lora_rank")
    steps: int = _trained("steps")
    backend: str = TrainingBackend.TINKER.value
    group_size: int = _trained("group_size")
    groups_per_step: int = _trained("groups_per_step")
    learning_rate: float | None = None
    output: Path | None = None
    force: bool = False
    environment: str = _trained("environment")
    max_turns: int = _trained("max_turns")
    standalone: bool = False  # one file with the whole loop (standalone.py), no TOML


def request_defaults() -> dict[str, Any]:
    """Every optional field of a request with its default: the one home of these values."""
    return {f.name: f.default for f in fields(BuildRequest) if f.default is not MISSING}


@dataclass
class BuiltLoop:
    """The files ``write_loop`` wrote and the warnings worth showing the user."""

    script: Path
    config: Path | None  # None for a standalone loop
    script_text: str
    config_text: str
    warnings: list[str] = field(default_factory=list)


def script_path(request: BuildRequest) -> Path:
    """Where the script goes: ``--output`` (``.py`` added if missing) or train_<verifiers>.py."""
    if request.output is not None:
        path = request.output
        if path.suffix != ".py":
            path = path.with_name(path.name + ".py")
    else:
        names = _reward_names(request.verifier.strip())
        path = Path(f"train_{'_'.join(names)}.py")
        if not FILE_NAME.fullmatch(path.name):
            path = Path("train.py")
    if not FILE_NAME.fullmatch(path.name):
        raise BuildError(
            "output",
            f"script name '{path.name}' should be at most 60 characters of letters, digits, "
            "'_', '-' and '.'",
        )
    return path


def render_loop(request: BuildRequest) -> tuple[str, str, list[str]]:
    """Validate ``request``; return (script text, TOML text, warnings). Writes nothing."""
    spec = request.verifier.strip()
    where = "under [verifier_config] in the TOML"
    if request.standalone:
        where = "in VERIFIER_CONFIG in the file"
    warnings = _check_reward(spec, where)
    _check_settings(request)
    tasks = _resolve_tasks(request.task, _reward_names(spec))
    _plain(request.model, "model", "--model")
    entry = lookup(request.model)
    if entry is None:
        guess = closest(request.model)
        hint = f"did you mean '{guess}'? " if guess else ""
        warnings.append(
            f"model '{request.model}' is not in the catalogue; {hint}"
            "check its name and chat template"
        )
    elif entry.note:
        warnings.append(f"{entry.name} {entry.note}")
    local_only = entry is not None and entry.backends == ("local",)
    backend = TrainingBackend.LOCAL.value if local_only else request.backend
    if request.learning_rate is not None:
        learning_rate, lr_source = request.learning_rate, "as given"
    elif entry is not None:
        learning_rate, lr_source = entry.learning_rate, "suggested for this model"
    else:
        learning_rate = TrainConfig.model_fields["learning_rate"].default
        lr_source = "TrainConfig's default; tune it for this model"
    script = script_path(request)
    values: dict[str, Any] = {
        "base_model": request.model,
        "backend": backend,
        "lora_rank": request.rank,
        "learning_rate": float(learning_rate),
        "steps": request.steps,
        "groups_per_step": request.groups_per_step,
        "group_size": request.group_size,
        "max_tokens": TrainConfig.model_fields["max_tokens"].default,
        "temperature": TrainConfig.model_fields["temperature"].default,
        "loss": request.loss,
        "reward": spec,
        "tasks": _relative_to(tasks, script.parent),
        **_environment(request),
        "save_every": SAVE_EVERY,
        "run_dir": f"runs/{script.stem}-{{time}}",
    }
    TrainConfig.model_validate(values)  # the builder's own checks should make this hold
    family = entry.family if entry else None
    if request.standalone:
        return render_standalone(script, values, family, local_only, lr_source), "", warnings
    python = _python(script, values, family, local_only)
    return python, _toml(script, values, family, lr_source), warnings


def write_loop(request: BuildRequest) -> BuiltLoop:
    """Render, then write the script and its TOML beside it (a standalone loop: the script
    alone), each atomically. Refuses to replace an existing file unless ``request.force``."""
    script_text, config_text, warnings = render_loop(request)
    script = script_path(request)
    config = None if request.standalone else script.with_suffix(".toml")
    if not request.force:
        for path in (script, config) if config else (script,):
            if path.exists():
                raise BuildError("output", f"{path} already exists; pass --force to overwrite it")
    script.parent.mkdir(parents=True, exist_ok=True)
    write_files({config: config_text, script: script_text} if config else {script: script_text})
    return BuiltLoop(script, config, script_text, config_text, warnings)


# --- validation -------------------------------------------------------------------------


def _reward_names(spec: str) -> list[str]:
    try:
        return spec_names(spec)
    except UserError as exc:
        raise BuildError("verifier", str(exc)) from None


def _check_reward(spec: str, where: str) -> list[str]:
    """Unknown names and bad syntax are errors; a verifier that needs settings is a warning
    (saying to set them ``where``)."""
    _plain(spec, "verifier", "--verifier")
    registry = get_plugins().registry
    for name in _reward_names(spec):
        try:
            registry.get(name)
        except UserError as exc:  # lists the known verifiers
            raise BuildError("verifier", str(exc)) from None
    try:
        reward_for(spec)
    except UserError as exc:
        return [f"{exc}; set it {where} before training"]
    except Exception as exc:  # noqa: BLE001 - a plugin's constructor fault is reported
        return [f"reward '{spec}' could not be set up: {type(exc).__name__}: {exc}"]
    return []


def _check_settings(request: BuildRequest) -> None:
    problem = policy_loss_problem(request.loss)
    if problem:
        raise BuildError("loss", problem)
    if request.backend not in BACKENDS:
        raise BuildError(
            "backend", f"unknown backend '{request.backend}'; choose {' or '.join(BACKENDS)}"
        )
    for name, value in (
        ("rank", request.rank),
        ("steps", request.steps),
        ("group_size", request.group_size),
        ("groups_per_step", request.groups_per_step),
        ("max_turns", request.max_turns),
    ):
        if value < 1:
            raise BuildError(name, f"{flag(name)} must be at least 1, got {value}")
    rate = request.learning_rate
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        raise BuildError("learning_rate", f"--learning-rate must be a positive number, got {rate}")


def flag(name: str) -> str:
    """The command-line flag of a request field."""
    return "--" + name.replace("_", "-")


def _resolve_tasks(task: str | None, names: list[str]) -> str:
    """The ``tasks`` setting: a JSONL path that exists, or a registered taskset:NAME."""
    if task is None:
        example = example_task_set(names)
        if example is None:
            raise BuildError(
                "task",
                f"no example task set is registered for '{names[0]}'; "
                "pass --task with a tasks JSONL file or taskset:NAME",
            )
        return example
    task = task.strip()
    _plain(task, "task", "--task")
    try:
        check_task_source(task)
    except UserError as exc:
        raise BuildError("task", str(exc)) from None
    return task


def _relative_to(tasks: str, folder: Path) -> str:
    """A tasks path as the TOML in ``folder`` must write it (relative to its own folder)."""
    if task_set_name(tasks) is not None or Path(tasks).is_absolute():
        return tasks
    return Path(os.path.relpath(os.path.abspath(tasks), os.path.abspath(folder))).as_posix()


def _plain(text: str, field: str, shown: str) -> None:
    if not text.strip():
        raise BuildError(field, f"{shown} must not be empty")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise BuildError(field, f"{shown} must not contain control characters")


# --- rendering --------------------------------------------------------------------------

SCRIPT = Template('''\
"""$docstring
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rl_verifier import UserError
from rl_verifier.train import load_config, run

CONFIG = Path(__file__).with_name("$config_name")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--backend", choices=["local", "tinker"], help="override the backend in the TOML"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one TOML setting for this run (repeatable)",
    )
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a stopped run")
    args = parser.parse_args()
    if args.backend:
        args.overrides.append(f"backend={args.backend}")
    try:
        config = load_config(CONFIG, args.overrides)
        run_dir = run(config, resume=args.resume)
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"run directory: {run_dir}")
    print(f"report: rlv report {run_dir}")


if __name__ == "__main__":
    main()
''')

GROUP_STARTS = {"base_model", "steps", "reward", "save_every"}  # a blank line before each


def _environment(request: BuildRequest) -> dict[str, Any]:
    """Environment settings, written only when they differ from a single turn."""
    if request.environment == "single_turn" and request.max_turns == 1:
        return {}
    if request.standalone:
        raise BuildError(
            "environment",
            "--standalone writes a single-turn loop; for environment "
            f"'{request.environment}' (max_turns {request.max_turns}) leave out --standalone",
        )
    try:
        check_environment(request.environment)
    except UserError as exc:
        raise BuildError("environment", str(exc)) from None
    return {"environment": request.environment, "max_turns": request.max_turns}


def _toml(script: Path, values: dict[str, Any], family: str | None, lr_source: str) -> str:
    notes = comments()
    notes["base_model"] += f" ({family} chat template)" if family else " (not catalogued)"
    notes["learning_rate"] += f" ({lr_source})"
    lines = [
        f"# Settings for {script.name}, read into rl_verifier.train.TrainConfig.",
        f"# Override one for a run: python {script.name} --set steps=5",
        "# More keys (advantage, loss_config, verifier_config, ...): rl_verifier/train/config.py",
    ]
    for key, value in values.items():
        if key in GROUP_STARTS:
            lines.append("")
        lines += [f"# {notes[key]}.", f"{key} = {_toml_value(value)}"]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ord(ch) < 32 or ord(ch) == 127:
                out.append(f"\\u{ord(ch):04X}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _python(script: Path, values: dict[str, Any], family: str | None, local_only: bool) -> str:
    config_name = script.with_suffix(".toml").name
    run = command(script)
    target = "verifier" if re.fullmatch(r"\w+", values["reward"]) else "reward"
    run_dir = values["run_dir"].replace("{time}", "YYYYmmdd-HHMMSS")
    if run != f"python {script.name}":  # run from elsewhere: the run is beside the TOML
        run_dir = (script.parent / run_dir).as_posix()
    if len(f"    {run} --resume {doc_escape(run_dir)}") > LINE_LENGTH:
        run_dir = "RUN_DIR"
    model = values["base_model"] + (f" ({family} chat template)" if family else "")
    rows = [
        (target, values["reward"]),
        ("tasks", values["tasks"]),
        ("model", f"{model}, LoRA rank {values['lora_rank']}"),
        ("loss", values["loss"]),
        (
            "schedule",
            f"{values['steps']} steps of {values['groups_per_step']} tasks x "
            f"{values['group_size']} samples, learning rate {values['learning_rate']:g}",
        ),
        ("backend", f"{values['backend']} (change it with --backend)"),
    ]
    title = f"Train {values['base_model']} with RL to pass the `{values['reward']}` {target}."
    parts = [
        wrap(title, ""),
        "",
        *(wrap(f"{label:<9} {text}", "    ", "              ") for label, text in rows),
        "",
        f"Settings are in {config_name}, beside this file.",
        "Override one for a run with --set key=value, e.g. --set steps=5.",
        "",
        *_run_lines(run, values["base_model"], values["backend"], local_only),
        f"Resume a stopped run (a checkpoint is saved every {values['save_every']} steps):",
        f"    {run} --resume {doc_escape(run_dir)}",
    ]
    return SCRIPT.substitute(docstring="\n".join(parts), config_name=config_name)


def _run_lines(run: str, model: str, backend: str, local_only: bool) -> list[str]:
    """How to start it: on Tinker and on this machine, each with the flag it needs."""
    local = "On this machine (starts rlv serve; needs rl-verifier[local]):"
    if local_only:
        return [
            f"{doc_escape(model)} trains on this machine only (rlv serve; needs "
            "rl-verifier[local]):",
            f"    {run}",
        ]
    tinker_flag, local_flag = (
        ("", " --backend local") if backend == "tinker" else (" --backend tinker", "")
    )
    return [
        "On Tinker:",
        f"    TINKER_API_KEY=... {run}{tinker_flag}",
        local,
        f"    {run}{local_flag}",
    ]
