"""Every hook has documentation and a test, or this fails (the datasette rule)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import rl_verifier
from rl_verifier.discovery import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [
    name
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
    if hasattr(fn, "rl_verifier_spec")
]
TESTED_BY = {
    "register_verifiers": "test_entry_point_plugin_is_loaded_with_its_distribution",
    "register_commands": "test_plugin_commands_hook_adds_a_command",
    "register_task_sets": "test_hook_register_task_sets_and_environments",
    "register_environments": "test_hook_register_task_sets_and_environments",
    "register_losses": "test_a_registered_loss_is_usable_everywhere",
    "register_sandbox_backends": "test_sandbox_backend_opens_by_name",
    "register_reward_protocols": "test_reward_protocol_is_served",
    "register_presets": "test_preset_shows_on_the_builder_page",
}


def test_hooks_found() -> None:
    assert set(HOOKS) == set(TESTED_BY)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook: str) -> None:
    docs = (ROOT / "docs" / "plugin-hooks.md").read_text()
    signature = f"{hook}{inspect.signature(getattr(hookspecs, hook))}".split(" ->")[0]
    assert f"## {hook}(" in docs, f"docs/plugin-hooks.md has no section for {hook}"
    params = list(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert f"## {hook}({', '.join(params)})" in docs, signature


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook: str) -> None:
    assert hook in TESTED_BY, f"name the test that exercises {hook} in TESTED_BY"
    tests = ROOT / "core" / "tests"
    files = [*tests.glob("test_*.py"), *tests.glob("support/*.py"), *ROOT.glob("tests/test_*.py")]
    sources = "".join(p.read_text() for p in files)
    assert f"def {TESTED_BY[hook]}(" in sources
    assert f"def {hook}(" in sources, f"no test plugin implements {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_argument_type_is_public_and_documented(hook: str) -> None:
    """A plugin can annotate its hook with a public type the docs name."""
    docs = (ROOT / "docs" / "plugin-hooks.md").read_text()
    [annotation] = [
        str(v) for k, v in getattr(hookspecs, hook).__annotations__.items() if k != "return"
    ]
    if annotation != "click.Group":
        assert annotation in rl_verifier.__all__, f"export {annotation} from rl_verifier"
        assert getattr(rl_verifier, annotation) is getattr(hookspecs, annotation)
    section = docs.split(f"## {hook}(")[1].split("\n## ")[0]
    assert f"`{annotation}`" in section, f"the {hook} section should name {annotation}"


@pytest.mark.parametrize("hook", HOOKS)
def test_registrar_signature_is_documented(hook: str) -> None:
    """The call the docs show for a registrar takes the arguments the registrar takes."""
    docs = (ROOT / "docs" / "plugin-hooks.md").read_text()
    section = docs.split(f"## {hook}(")[1].split("\n## ")[0]
    [annotation] = [
        v for k, v in getattr(hookspecs, hook).__annotations__.items() if k != "return"
    ]
    if annotation == "click.Group":
        return
    call = getattr(hookspecs, annotation).__call__
    positional = [
        name
        for name, p in inspect.signature(call).parameters.items()
        if name != "self" and p.kind is inspect.Parameter.POSITIONAL_ONLY
    ]
    shown = f"register({', '.join(positional)})"
    if len(positional) == 1 and positional[0] not in ("verifier",):
        shown = "register("  # a record: register(Loss(...)), register(Preset(...))
    assert shown in section or "register(cls)" in section, f"{hook}: document {shown}"
