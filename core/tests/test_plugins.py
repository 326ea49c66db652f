"""Plugin discovery: each plugin's fault stays with that plugin."""

from __future__ import annotations

import pytest
from rlv_fake_plugins import GOOD_PLUGIN, MakePlugin

from rl_verifier.discovery.plugins import discover


def by_name(plugins: object) -> dict[str, dict]:
    return {p["name"]: p for p in plugins.listing()}  # type: ignore[attr-defined]


def test_entry_point_plugin_is_loaded_with_its_distribution(make_plugin: MakePlugin) -> None:
    make_plugin("good", GOOD_PLUGIN)
    plugins = discover()
    info = by_name(plugins)["good"]
    assert info["state"] == "loaded"
    assert (info["distribution"], info["version"]) == ("rl-verifier-good", "0.3.1")
    assert info["verifiers"] == ["good"]
    assert plugins.registry.get("good").version == "0.3.1"


def test_plugin_that_fails_to_import_is_reported_and_others_work(make_plugin: MakePlugin) -> None:
    make_plugin("good", GOOD_PLUGIN)
    make_plugin("broken", "import no_such_module_for_rlv\n")
    plugins = discover()
    broken = by_name(plugins)["broken"]
    assert broken["state"] == "failed"
    assert "ModuleNotFoundError" in broken["errors"][0]
    assert "no_such_module_for_rlv" in broken["errors"][0]
    assert "good" in plugins.registry


def test_plugin_calling_sys_exit_on_import_does_not_end_discovery(make_plugin: MakePlugin) -> None:
    make_plugin("exits", "import sys\nsys.exit(1)\n")
    make_plugin("good", GOOD_PLUGIN)
    plugins = discover()
    assert by_name(plugins)["exits"]["state"] == "failed"
    assert "good" in plugins.registry


def test_unknown_hook_is_rejected_naming_the_plugin(make_plugin: MakePlugin) -> None:
    make_plugin(
        "typo",
        "from rl_verifier import hookimpl\n@hookimpl\ndef register_verifierz(register): pass\n",
    )
    make_plugin("good", GOOD_PLUGIN)
    plugins = discover()
    typo = by_name(plugins)["typo"]
    assert typo["state"] == "failed"
    assert "register_verifierz" in typo["errors"][0]
    assert "good" in plugins.registry
    assert not plugins.pm.has_plugin("typo")


def test_hook_that_raises_is_reported(make_plugin: MakePlugin) -> None:
    make_plugin(
        "raiser",
        "from rl_verifier import hookimpl\n"
        "@hookimpl\ndef register_verifiers(register): raise ValueError('boom')\n",
    )
    info = by_name(discover())["raiser"]
    assert info["state"] == "failed"
    assert "ValueError: boom" in info["errors"][0]


def test_name_conflict_names_both_classes_and_keeps_the_first(make_plugin: MakePlugin) -> None:
    make_plugin("good", GOOD_PLUGIN)
    make_plugin(
        "clash",
        GOOD_PLUGIN.replace("class Good", "class Impostor").replace(
            "register(Good)", "register(Impostor)"
        ),
    )
    plugins = discover()
    infos = by_name(plugins)
    first, second = ("good", "clash") if infos["good"]["verifiers"] else ("clash", "good")
    error = infos[second]["errors"][0]
    assert "'good'" in error and "Good" in error and "Impostor" in error
    assert plugins.registry.get("good").plugin == first


def test_registering_a_non_verifier_is_reported(make_plugin: MakePlugin) -> None:
    make_plugin(
        "notaclass",
        "from rl_verifier import hookimpl\n"
        "@hookimpl\ndef register_verifiers(register): register(object)\n",
    )
    info = by_name(discover())["notaclass"]
    assert "not a subclass of rl_verifier.Verifier" in info["errors"][0]


@pytest.mark.parametrize(
    ("variable", "value", "good_state"),
    [
        ("RLV_DISABLE_PLUGINS", "good", "disabled"),
        ("RLV_DISABLE_PLUGINS", "rl-verifier-good", "disabled"),
        ("RLV_DISABLE_PLUGINS", "other", "loaded"),
        ("RLV_LOAD_PLUGINS", "other", "disabled"),
        ("RLV_LOAD_PLUGINS", "other, rl_verifier_good", "loaded"),
    ],
)
def test_allow_and_block_lists(
    make_plugin: MakePlugin,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    good_state: str,
) -> None:
    make_plugin("good", GOOD_PLUGIN)
    monkeypatch.setenv(variable, value)
    plugins = discover()
    assert by_name(plugins)["good"]["state"] == good_state
    assert ("good" in plugins.registry) == (good_state == "loaded")
    assert by_name(plugins)["builtin"]["state"] == "loaded"


TASKS_AND_ENVS = """
from rl_verifier import Task, hookimpl

@hookimpl
def register_task_sets(register):
    register("tiny-set", lambda: [Task(id="a", prompt="p")])

@hookimpl
def register_environments(register):
    register("echo_env", lambda config: "an environment")
"""


def test_hook_register_task_sets_and_environments(make_plugin: MakePlugin) -> None:
    make_plugin("sets", TASKS_AND_ENVS)
    make_plugin("clash", TASKS_AND_ENVS)
    plugins = discover()
    task_set = plugins.task_sets["tiny-set"]
    assert [t.id for t in task_set.value()] == ["a"]
    assert plugins.environments["echo_env"].value(None) == "an environment"
    owner = task_set.plugin
    other = "clash" if owner == "sets" else "sets"
    errors = by_name(plugins)[other]["errors"]
    assert any("task set name 'tiny-set'" in e and f"plugin '{owner}'" in e for e in errors)
    assert any("environment name 'echo_env'" in e for e in errors)
    assert "single_turn" in plugins.environments
