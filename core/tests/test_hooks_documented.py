"""Every hook has documentation and a test, or this fails (the datasette rule)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import rl_verifier
from rl_verifier import hookspecs

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
    sources = "".join(
        p.read_text() for p in [*tests.glob("test_*.py"), *tests.glob("support/*.py")]
    )
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
