"""Plugins, the sandbox and the server use only public names: ``rl_verifier`` (and its test
kit, training API and CLI support) and ``rl_verifier_sandbox``'s package namespace, never the
modules behind them."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import rlv_imports
from rlv_imports import cycles, reachable

import rl_verifier
import rl_verifier.cli_support
import rl_verifier.internal
import rl_verifier.train
import rl_verifier_sandbox

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {
    "rl_verifier": set(rl_verifier.__all__),
    "rl_verifier.testing": None,  # the test kit, public as a whole
    "rl_verifier.train": set(rl_verifier.train.__all__),
    "rl_verifier.cli_support": set(rl_verifier.cli_support.__all__),
    "rl_verifier_sandbox": set(rl_verifier_sandbox.__all__),
}
# What only this repository's packages share: open to them, never to users' code (the docs'
# examples, the generated training script).
OUR_PACKAGES_ONLY = {"rl_verifier.internal": set(rl_verifier.internal.__all__)}
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "src").is_dir())
# The trainer adapters: each module is public as a whole, for trainer users (docs/integrations).
INTEGRATIONS: dict[str, set[str] | None] = {
    f"rl_verifier.integrations.{path.stem}": None
    for path in (ROOT / "core/src/rl_verifier/integrations").glob("*.py")
    if not path.stem.startswith("_") and path.stem != "common"
}
# Every distribution apart from the core: each may import only the public names of others.
CLIENTS = [*PLUGINS, ROOT / "sandbox", ROOT / "server"]


def imports_of(path: Path, own: str) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of a core or sandbox module in ``path``, whose
    own package ``own`` is left out."""
    foreign = {"rl_verifier", "rl_verifier_sandbox"} - {own}
    found = imports_of_text(path.read_text(), str(path), own)
    return [f for f in found if f[1].split(".")[0] in foreign]


def is_ours(package: str) -> bool:
    """A package of this repository: the core, the sandbox, the server or a plugin."""
    return package == "rl_verifier" or package.startswith("rl_verifier_")


def plugin_packages() -> dict[str, set[str] | None]:
    """Each plugin's import package with its ``__all__``: what other plugins may import."""
    found: dict[str, set[str] | None] = {}
    for plugin in PLUGINS:
        for init in (plugin / "src").glob("*/__init__.py"):
            module = importlib.import_module(init.parent.name)
            found[init.parent.name] = set(getattr(module, "__all__", ()))
    return found


def private_imports(path: Path, text: str, own: str, ours: bool = True) -> list[str]:
    """Each import in ``text`` of a name another package of ours does not make public;
    ``ours`` is false for users' code, which may not use ``rl_verifier.internal``."""
    packages = plugin_packages()
    internal = OUR_PACKAGES_ONLY if ours else {}
    public_modules = {**PUBLIC_MODULES, **internal, **packages, **INTEGRATIONS}
    repository = {"rl_verifier", "rl_verifier_sandbox", *packages}
    problems = []
    for line, module, names in imports_of_text(text, str(path), own):
        if module.split(".")[0] not in repository:
            continue  # an example's own package (rl_verifier_my_check), not one of ours
        if module.split(".")[0] == "rl_verifier_server":
            continue  # the server is a program, not a library: nothing imports it
        where = f"{path.relative_to(ROOT)}:{line}"
        problems += import_problems(where, module, names, public_modules)
    return problems


def import_problems(
    where: str, module: str, names: list[str], public_modules: dict[str, set[str] | None]
) -> list[str]:
    """Why importing ``names`` from ``module`` reaches past what it makes public."""
    if module not in public_modules:
        return [f"{where}: imports private module {module}"]
    public = public_modules[module]
    private = [n for n in names if public is not None and n not in public]
    return [f"{where}: {module} does not export {', '.join(private)}"] if private else []


def imports_of_text(text: str, name: str, own: str) -> list[tuple[int, str, list[str]]]:
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
    return [f for f in found if is_ours(f[1].split(".")[0]) and f[1].split(".")[0] != own]


@pytest.mark.parametrize("client", CLIENTS, ids=[p.name for p in CLIENTS])
def test_imports_only_public_names_of_other_packages(client: Path) -> None:
    problems = []
    [package] = [p.parent.name for p in (client / "src").glob("*/__init__.py")]
    for path in sorted((client / "src").rglob("*.py")):
        for line, module, names in imports_of(path, package):
            where = f"{path.relative_to(ROOT)}:{line}"
            problems += import_problems(
                where, module, names, {**PUBLIC_MODULES, **OUR_PACKAGES_ONLY}
            )
    assert not problems, "\n".join(problems)


def plugin_problems(plugin: Path, folder: str) -> list[str]:
    """Private imports in one folder (``src`` or ``tests``) of a plugin."""
    [package] = [p.parent.name for p in (plugin / "src").glob("*/__init__.py")]
    paths = sorted((plugin / folder).rglob("*.py"))
    return [p for path in paths for p in private_imports(path, path.read_text(), package)]


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugins_import_only_public_names_of_other_plugins(plugin: Path) -> None:
    # the core's and the sandbox's names: test_imports_only_public_names_of_other_packages
    problems = [p for p in plugin_problems(plugin, "src") if "rl_verifier_" in p.split(": ", 1)[1]]
    assert not problems, "\n".join(problems)


# A white-box check of the sandbox's uid slots (no process left behind), not a client.
PLUGIN_TEST_EXCEPTIONS = {
    ("lean", "rl_verifier_sandbox.linux.slots"),
    ("lean", "rl_verifier_sandbox.linux"),
}


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_tests_import_only_public_names(plugin: Path) -> None:
    """A plugin's tests are a client too: what they import, a third party's tests can."""
    problems = [
        problem
        for problem in plugin_problems(plugin, "tests")
        if (plugin.name, problem.split()[-1]) not in PLUGIN_TEST_EXCEPTIONS
    ]
    assert not problems, "\n".join(problems)


def test_docs_code_blocks_import_only_public_names() -> None:
    problems = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            try:
                problems += private_imports(page, block, own="", ours=False)
            except SyntaxError:
                continue  # a fragment, not a program
    assert not problems, "\n".join(problems)


def test_the_generated_training_script_imports_only_public_names() -> None:
    from rl_verifier.train.script_writer import BuildRequest, render_loop

    for standalone in (False, True):
        request = BuildRequest(verifier="format", model="rlv/tiny-chat", standalone=standalone)
        script, _, _ = render_loop(request)
        problems = private_imports(ROOT / "train_format.py", script, own="", ours=False)
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_a_plugins_folder_distribution_import_and_entry_point_share_one_name(
    plugin: Path,
) -> None:
    project = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    assert project["name"] == "rl-verifier-" + plugin.name.replace("_", "-")
    assert [p.parent.name for p in (plugin / "src").glob("*/__init__.py")] == [
        f"rl_verifier_{plugin.name}"
    ]
    assert project["entry-points"]["rl_verifier"] == {
        plugin.name: f"rl_verifier_{plugin.name}.plugin"
    }


def test_users_code_may_not_import_the_internal_module() -> None:
    code = "from rl_verifier.internal import Registry\nfrom rl_verifier import Verifier\n"
    assert private_imports(ROOT / "example.py", code, own="", ours=False) == [
        "example.py:1: imports private module rl_verifier.internal"
    ]
    assert private_imports(ROOT / "example.py", code, own="") == []


def test_names_moved_to_internal_still_import_from_the_top_with_a_warning() -> None:
    for name in rl_verifier.internal.__all__:
        assert name not in rl_verifier.__all__
        with pytest.warns(DeprecationWarning, match="rl_verifier.internal"):
            assert getattr(rl_verifier, name) is getattr(rl_verifier.internal, name)


def test_a_moved_name_imports_in_a_fresh_interpreter() -> None:
    """Before anything has imported ``rl_verifier.internal`` (here it has): the old import
    recursed until Python gave up."""
    code = "from rl_verifier import write_text; print(write_text.__module__)"
    argv = [sys.executable, "-W", "always::DeprecationWarning", "-c", code]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "rl_verifier.files.atomic"
    assert "import it from rl_verifier.internal" in done.stderr


def test_every_public_name_exists() -> None:
    modules = (rl_verifier, rl_verifier.train, rl_verifier.cli_support, rl_verifier.internal)
    for module in (*modules, rl_verifier_sandbox):
        for name in module.__all__:
            assert getattr(module, name, None) is not None, f"{module.__name__}.{name}"


def test_every_public_name_is_documented() -> None:
    pages = {
        rl_verifier: ROOT / "docs/python-api.md",
        rl_verifier.cli_support: ROOT / "docs/python-api.md",
        rl_verifier.internal: ROOT / "docs/python-api.md",
    }
    for module, page in pages.items():
        spans = re.findall(r"`([^`\n]+)`", page.read_text())
        named = {word for span in spans for word in re.findall(r"[A-Za-z_]\w*", span)}
        missing = [name for name in module.__all__ if name not in named]
        assert not missing, f"{page.name} does not document {module.__name__}: {missing}"


# -- the module graph ------------------------------------------------------------------

SOURCES = [ROOT / "core/src", ROOT / "sandbox/src", ROOT / "server/src"] + [
    plugin / "src" for plugin in PLUGINS
]
# The local training backend: where the core starts ``rlv serve`` and asks it for its models.
SERVER_SEAM = {"rl_verifier.train.backend", "rl_verifier.train.local_models"}


def import_graph() -> dict[str, set[str]]:
    return rlv_imports.import_graph(SOURCES)


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_core_reaches_the_server_only_through_the_local_backend() -> None:
    graph = import_graph()
    problems = []
    for name, imported in graph.items():
        if not name.startswith("rl_verifier."):
            continue
        for other in imported:
            top = other.split(".")[0]
            if top == "rl_verifier_server" and name not in SERVER_SEAM:
                problems.append(f"{name} imports {other}")
            elif top != "rl_verifier" and top != "rl_verifier_server":
                problems.append(f"{name} imports {other}")  # the sandbox or a plugin
    assert not problems, "\n".join(problems)


def test_the_builtin_verifiers_do_not_load_the_training_package() -> None:
    loaded = reachable(import_graph(), "rl_verifier.builtin.plugin")
    assert "rl_verifier.base.contracts" in loaded
    assert not {m for m in loaded if m.startswith("rl_verifier.train")}


def test_verdict_failed_is_errored_under_its_deprecated_name() -> None:
    with pytest.warns(DeprecationWarning, match="Verdict.errored"):
        verdict = rl_verifier.Verdict.failed("checker crashed")
    assert verdict == rl_verifier.Verdict.errored("checker crashed")


# What plugins and users import today, per public module: a name may be added, never dropped
# (the core's layout may change behind them; issue 45 moved every module and kept these).
PUBLISHED = {
    "rl_verifier": [
        "BatchResult", "ChatMessage", "Completion", "CompletionLike", "DiskStore",
        "EnvironmentFactory", "EnvironmentRegistrar", "Executor", "InlineExecutor", "InputFile",
        "Loss", "LossRegistrar", "PipedProcess", "Preset", "PresetRegistrar", "ProcessExecutor",
        "Regex", "Reward", "RewardProtocol", "RewardProtocolRegistrar", "Sample", "SandboxBackend",
        "SandboxBackendRegistrar", "Score", "Scorer", "Status", "Task", "TaskLike",
        "TaskSetRegistrar", "Text", "ToolCall", "UserError", "Verdict", "VerdictCache", "Verifier",
        "VerifierConfig", "VerifierRef", "VerifierRegistrar", "__version__", "after_reasoning",
        "completion_text", "content_text", "file_digest", "files_digest", "hookimpl",
        "make_executor", "normalise_answer", "parse_python", "parse_tool_calls",
        "publish_directory", "reference_answers", "reward_for", "score_batch"
    ],
    "rl_verifier.train": [
        "Environment", "Episode", "Renderer", "RunDir", "SingleTurn", "TOOL_RECORD_KEY", "ToolUse",
        "TrainConfig", "Turn", "group_advantages", "group_seed", "is_degenerate", "load_config",
        "load_tasks", "run", "run_episode", "run_group", "task_messages", "tasks_for_step"
    ],
    "rl_verifier.cli_support": [
        "CLIP_INPUTS", "HEADER_TIMEOUT_S", "MAX_DEPTH", "RL_INPUTS", "SEQUENCE_INPUTS",
        "bind_listener", "check_input", "is_loopback", "key_matches", "loaded_plugins",
        "loss_table", "printable", "rlv_main", "signals_end_quietly", "url_for", "uvicorn_server"
    ],
    "rl_verifier.internal": [
        "CallSyntaxError", "Entry", "OPEN_TAG", "Registry", "UNTERMINATED", "bracketed",
        "message_tool_calls", "openai_tool_calls", "parse_bfcl_json_calls", "parse_python_calls",
        "replace_directory", "strip_tool_calls", "tagged_tool_calls", "unknown_message",
        "write_text"
    ],
    "rl_verifier.testing": [
        "Case", "GroupCase", "GroupVerifierContract", "VerifierContract", "build_environment",
        "discover", "get_plugins", "load_task_source", "pack", "read_samples", "read_tasks",
        "rlv_cli", "score_groups", "score_once"
    ],
}


def test_every_published_name_still_imports() -> None:
    missing = []
    for module, names in PUBLISHED.items():
        imported = importlib.import_module(module)
        missing += [f"{module}.{n}" for n in names if n not in imported.__all__]
        missing += [f"{module}.{n}" for n in names if not hasattr(imported, n)]
    assert not missing, missing
