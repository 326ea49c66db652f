"""``rlv new --standalone``: one file, ruff and mypy clean as written, only public names of
rl_verifier, and a docstring that says what it does and what it leaves out."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import rl_verifier
import rl_verifier.train
from rl_verifier.base.errors import UserError
from rl_verifier.discovery.losses import get_loss
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.train.script_writer import BuildRequest, render_loop, write_loop

REPO = Path(__file__).resolve().parents[2]
PUBLIC = {
    "rl_verifier": set(rl_verifier.__all__),
    "rl_verifier.train": set(rl_verifier.train.__all__),
}
PRIMITIVES = (
    "create_lora_training_client",
    "save_weights_and_get_sampling_client",
    "sample",
    "forward_backward",
    "optim_step",
    "save_state",
    "create_training_client_from_state_with_optimizer",
)


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "t1", "prompt": "Say hi.", "reference": {"answer": "hi"}}\n')
    return path


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_every_verifiers_file_and_an_awkward_one_pass_ruff_and_mypy(
    tasks: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "loops"
    for verifier in get_plugins().registry.names():
        write_loop(
            BuildRequest(
                verifier=verifier,
                model="Qwen/Qwen3-8B",
                task=str(tasks),
                standalone=True,
                output=folder / f"train_{verifier}.py",
            )
        )
    deep = tmp_path / ("a-rather-long-folder-name-for-tasks-" * 3 + 'café "quoted" \\ dir')
    deep.mkdir()
    (deep / "tasks with spaces.jsonl").write_text("{}\n")
    awkward = write_loop(
        BuildRequest(
            verifier="0.8*exact_match + 0.2*format",
            model="some-org/" + "Very-Long-Model-Name-" * 5,
            task=str(deep / "tasks with spaces.jsonl"),
            loss="ppo",
            standalone=True,
            output=folder / "train_awkward.py",
        )
    )
    assert "TASKS = (" in awkward.script_text  # split to fit the line length
    files = sorted(str(p) for p in folder.glob("*.py"))
    assert sorted(p.name for p in folder.iterdir()) == sorted(Path(f).name for f in files)
    ruff = tool("ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), *files)
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    mypy = tool("mypy", "--config-file", str(REPO / "pyproject.toml"), *files)
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr
    namespace: dict[str, object] = {}
    exec(compile(awkward.script_text, "awkward", "exec"), namespace)  # the constants hold
    assert namespace["TASKS"] == str(deep / "tasks with spaces.jsonl")  # absolute, as given
    assert namespace["LOSS"] == "ppo" and namespace["LOSS_CONFIG"] == {}


def test_imports_only_tinker_the_standard_library_and_public_names(tasks: Path) -> None:
    text, config, _ = render_loop(
        BuildRequest(
            verifier="exact_match", model="rlv/tiny-chat", task=str(tasks), standalone=True
        )
    )
    assert config == ""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            assert all(m == "tinker" or m in sys.stdlib_module_names for m in modules), modules
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {alias.name for alias in node.names}
            if module in PUBLIC:
                assert names <= PUBLIC[module], names - PUBLIC[module]
            else:
                top = module.split(".")[0]
                assert top in ("tinker", "__future__") or top in sys.stdlib_module_names, module


def test_docstring_names_the_primitives_and_what_it_leaves_out(tasks: Path, tmp_path: Path) -> None:
    built = write_loop(
        BuildRequest(
            verifier="exact_match",
            model="Qwen/Qwen3-8B",
            task=str(tasks),
            loss="ppo",
            standalone=True,
            output=tmp_path / "train_x.py",
        )
    )
    assert built.config is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.jsonl", "train_x.py"]
    doc = built.script_text.split('"""')[1]
    for needed in (*PRIMITIVES, "warm start", "multi-turn", "sampling_ahead", "rlv report"):
        assert needed in doc, needed
    assert "TINKER_API_KEY=... python" in doc and "rlv serve --port 8000 --preload" in doc
    for name in get_loss("ppo").inputs:  # the datum carries what the loss reads
        assert f'"{name}": types.TensorData(' in built.script_text
    assert "clip_low_threshold (default 0.8)" in built.script_text
    result = subprocess.run(
        [sys.executable, str(built.script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "--resume" in result.stdout and "forward_backward" in result.stdout
    with pytest.raises(UserError, match=r"train_x\.py already exists"):
        write_loop(BuildRequest("exact_match", "Qwen/Qwen3-8B", task=str(tasks), standalone=True,
                                output=tmp_path / "train_x.py"))  # fmt: skip


def test_a_multi_turn_environment_needs_the_full_loop(tasks: Path) -> None:
    request = BuildRequest(
        verifier="exact_match",
        model="rlv/tiny-chat",
        task=str(tasks),
        environment="single_turn",
        max_turns=3,
        standalone=True,
    )
    with pytest.raises(UserError, match=r"--standalone writes a single-turn loop; .*leave out"):
        render_loop(request)
    assert render_loop(replace(request, standalone=False))[1]  # the full loop takes it


def test_the_loop_in_the_training_docs_is_what_rlv_new_writes() -> None:
    text = (REPO / "docs/training.md").read_text()
    command = "rlv new --verifier calibration --model Qwen/Qwen3-4B-Instruct-2507 --standalone"
    assert command in text
    shown = text.split("<summary>train_calibration.py</summary>\n\n```python\n", 1)[1]
    shown = shown.split("```\n\n</details>", 1)[0]
    script, _, _ = render_loop(
        BuildRequest("calibration", "Qwen/Qwen3-4B-Instruct-2507", standalone=True)
    )
    assert shown == script
