"""``rlv new``: the generated script and TOML validate, compile, pass ruff, and say what they do."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.train.catalog import CATALOG, lookup
from rl_verifier.train.config import load_config
from rl_verifier.train.script_writer import BuildRequest, render_loop, write_loop

REPO = Path(__file__).resolve().parents[2]


def ruff_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(REPO / "pyproject.toml"),
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "t1", "prompt": "Say hi.", "reference": {"answer": "hi"}}\n')
    return path


@pytest.fixture
def request_(tasks: Path, tmp_path: Path) -> BuildRequest:
    return BuildRequest(
        verifier="exact_match",
        model="Qwen/Qwen3-8B",
        task=str(tasks),
        output=tmp_path / "out" / "train_x.py",
    )


def check_generated(script: Path, config: Path) -> None:
    """The TOML validates, the script compiles and passes ruff check."""
    load_config(config)
    compile(script.read_text(encoding="utf-8"), str(script), "exec")
    result = ruff_check(script)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("verifier", get_plugins().registry.names())
def test_every_verifier_gets_a_valid_clean_loop(
    verifier: str, request_: BuildRequest, tmp_path: Path
) -> None:
    built = write_loop(replace(request_, verifier=verifier))
    assert built.script == tmp_path / "out" / "train_x.py"
    assert built.config == tmp_path / "out" / "train_x.toml"
    check_generated(built.script, built.config)
    config = load_config(built.config)
    assert config.reward == verifier
    assert config.tasks == request_.task
    assert config.base_model == "Qwen/Qwen3-8B"
    assert (config.lora_rank, config.steps, config.save_every) == (32, 50, 10)
    assert config.run_dir == str(tmp_path / "out" / "runs" / "train_x-{time}")  # beside it
    assert 40 <= len(built.script_text.splitlines()) <= 70
    doc = built.script_text.split('"""')[1]
    for needed in (verifier, "Qwen/Qwen3-8B", "importance_sampling", "LoRA rank 32", "50 steps"):
        assert needed in doc
    assert "TINKER_API_KEY=... python" in doc
    assert "--backend local" in doc
    assert "--resume runs/train_x-" in doc


def test_awkward_names_and_paths_still_pass_ruff(tmp_path: Path) -> None:
    folder = tmp_path / ("a-rather-long-folder-name-for-tasks-" * 3 + 'café "quoted" \\ dir')
    folder.mkdir()
    tasks = folder / "tasks with spaces.jsonl"
    tasks.write_text("{}\n")
    request = BuildRequest(
        verifier="0.8*exact_match + 0.2*format",
        model="some-org/" + "Very-Long-Model-Name-" * 5,
        task=str(tasks),
        output=tmp_path / ("deep-" * 20) / "train_mix",
    )
    built = write_loop(request)
    assert built.script.name == "train_mix.py"
    check_generated(built.script, built.config)
    config = load_config(built.config)
    assert config.tasks == str(tasks)
    assert config.reward == "0.8*exact_match + 0.2*format"
    long_lines = [line for line in built.script_text.splitlines() if len(line) > 100]
    assert long_lines and all(len(line.split()) == 1 for line in long_lines)  # one word: ruff-ok


def test_a_relative_task_path_is_written_relative_to_the_toml(
    tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    request = BuildRequest(
        verifier="exact_match", model="rlv/tiny-chat", task=tasks.name, output=Path("sub/train_x")
    )
    built = write_loop(request)
    assert 'tasks = "../tasks.jsonl"' in built.config_text
    monkeypatch.chdir(tmp_path / "sub")  # the TOML, not the current directory, anchors it
    assert load_config(tmp_path / built.config).tasks == str(tasks)
    doc = built.script_text.split('"""')[1]
    assert "python sub/train_x.py --resume sub/runs/train_x-YYYYmmdd-HHMMSS" in doc


def test_generated_script_explains_itself_in_help(request_: BuildRequest) -> None:
    built = write_loop(request_)
    result = subprocess.run(
        [sys.executable, str(built.script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    for needed in ("exact_match", "TINKER_API_KEY", "--backend", "--set", "--resume"):
        assert needed in result.stdout


def test_render_is_deterministic_and_matches_what_is_written(request_: BuildRequest) -> None:
    first = render_loop(request_)
    assert render_loop(request_) == first
    built = write_loop(request_)
    assert (built.script_text, built.config_text, built.warnings) == first
    assert built.script.read_text(encoding="utf-8") == first[0]
    assert built.config.read_text(encoding="utf-8") == first[1]


def test_write_refuses_to_overwrite_unless_forced(request_: BuildRequest) -> None:
    built = write_loop(request_)
    built.script.write_text("# mine\n")
    with pytest.raises(UserError, match=r"train_x\.py already exists; pass --force"):
        write_loop(request_)
    assert built.script.read_text() == "# mine\n"
    built.script.unlink()
    with pytest.raises(UserError, match=r"train_x\.toml already exists"):
        write_loop(request_)  # the TOML alone also blocks
    again = write_loop(replace(request_, force=True, steps=7))
    assert load_config(again.config).steps == 7
    assert sorted(p.name for p in again.script.parent.iterdir()) == [
        "train_x.py",
        "train_x.toml",
    ]  # no temporary files left behind


def test_default_output_name_comes_from_the_verifiers(
    tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    built = write_loop(BuildRequest("exact_match*format", "Qwen/Qwen3-8B", task=str(tasks)))
    assert built.script == Path("train_exact_match_format.py")
    assert (tmp_path / "train_exact_match_format.toml").is_file()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"verifier": "nope"}, r"unknown verifier 'nope'; known are: .*exact_match"),
        ({"verifier": "0.5*exact_match + nope"}, r"unknown verifier 'nope'"),
        ({"verifier": "exact_match +"}, r"ends with an operator"),
        ({"verifier": "  "}, r"--verifier must not be empty"),
        ({"rank": 0}, r"^--rank must be at least 1, got 0$"),
        ({"steps": 0}, r"^--steps must be at least 1, got 0$"),
        ({"group_size": 0}, r"--group-size must be at least 1"),
        (
            {"loss": "sgd"},
            r"^unknown loss 'sgd'; known are: importance_sampling, ppo, cispo, dro(, \w+)*$",
        ),
        ({"backend": "gpu"}, r"unknown backend 'gpu'"),
        ({"learning_rate": -1.0}, r"--learning-rate must be a positive number"),
        ({"task": "missing.jsonl"}, r"^tasks file 'missing.jsonl' does not exist$"),
        ({"task": "taskset:nope"}, r"^unknown task set 'nope'; known are: "),
        ({"model": ""}, r"--model must not be empty"),
        ({"output": Path("bad name.py")}, r"script name 'bad name.py' should be"),
    ],
)
def test_bad_requests_are_one_line_user_errors(
    request_: BuildRequest, change: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message) as caught:
        render_loop(replace(request_, **change))  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_task_defaults_to_the_verifiers_example_task_set(
    request_: BuildRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = get_plugins()
    monkeypatch.setattr(plugins, "task_sets", {"format-example": object()}, raising=False)
    _, toml, _ = render_loop(replace(request_, verifier="exact_match + format", task=None))
    assert 'tasks = "taskset:format-example"' in toml
    monkeypatch.setattr(plugins, "task_sets", {}, raising=False)
    with pytest.raises(UserError, match=r"no example task set .* 'exact_match'; pass --task"):
        render_loop(replace(request_, task=None))


def test_unknown_model_is_a_warning_not_an_error(request_: BuildRequest) -> None:
    _, toml, warnings = render_loop(replace(request_, model="acme/Mystery-7B"))
    assert warnings == [
        "model 'acme/Mystery-7B' is not in the catalogue; check its name and chat template"
    ]
    assert 'base_model = "acme/Mystery-7B"' in toml
    assert "learning_rate = 4e-05" in toml  # TrainConfig's default
    _, _, warnings = render_loop(replace(request_, model="qwen/qwen3-8b"))
    assert "did you mean 'Qwen/Qwen3-8B'?" in warnings[0]
    _, _, warnings = render_loop(replace(request_, model="meta-llama/Llama-3.1-8B-Instruct"))
    assert warnings == []


def test_catalogue_learning_rate_unless_the_user_gives_one(request_: BuildRequest) -> None:
    llama = lookup("meta-llama/Llama-3.1-8B-Instruct")
    assert llama is not None and llama.family == "llama3"
    _, toml, _ = render_loop(replace(request_, model=llama.name))
    assert f"learning_rate = {llama.learning_rate!r}" in toml
    _, toml, _ = render_loop(replace(request_, model=llama.name, learning_rate=3e-5))
    assert "learning_rate = 3e-05" in toml


def test_tiny_chat_trains_locally(request_: BuildRequest) -> None:
    built = write_loop(replace(request_, model="rlv/tiny-chat", backend="tinker"))
    config = load_config(built.config)
    assert config.backend == "local"
    assert config.learning_rate == pytest.approx(2e-3)
    assert built.warnings == []
    assert "TINKER_API_KEY" not in built.script_text
    check_generated(built.script, built.config)


def test_backend_local_request_flips_the_commands(request_: BuildRequest) -> None:
    text, toml, _ = render_loop(replace(request_, backend="local"))
    assert 'backend = "local"' in toml
    assert "TINKER_API_KEY=... python" in text and "--backend tinker" in text


def test_catalogue_is_consistent() -> None:
    names = [entry.name for entry in CATALOG]
    assert len(names) == len(set(names))
    for needed in ("Qwen/Qwen3.5-9B", "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V3.1"):
        assert lookup(needed) is not None
    assert all(0 < entry.learning_rate < 1e-2 for entry in CATALOG)
    assert lookup("nope/nothing") is None


def test_multi_turn_environment_is_written_and_validated(tmp_path: Path) -> None:
    from rl_verifier.base.errors import UserError
    from rl_verifier.train.config import TrainConfig
    from rl_verifier.train.script_writer import BuildRequest, render_loop

    request = BuildRequest(
        verifier="exact_match", model="rlv/tiny-chat", environment="single_turn", max_turns=3
    )
    _, toml, _ = render_loop(request)
    assert 'environment = "single_turn"' in toml and "max_turns = 3" in toml
    import tomllib

    assert TrainConfig.model_validate(tomllib.loads(toml)).max_turns == 3
    with pytest.raises(UserError, match="unknown environment 'nope'; known are: "):
        render_loop(
            BuildRequest(
                verifier="exact_match", model="rlv/tiny-chat", environment="nope", max_turns=2
            )
        )


def test_the_cli_and_the_builder_page_take_their_defaults_from_the_request() -> None:
    from rl_verifier.cli.new import new_loop
    from rl_verifier.train.script_writer import request_defaults
    from rl_verifier.web.app import options

    defaults = request_defaults()
    flags = {p.name: p.default for p in new_loop.params if p.name in defaults}
    assert set(flags) == set(defaults)  # every optional request field is a flag
    for name, value in flags.items():
        assert value == defaults[name] or (name == "force" and not defaults[name]), name
    page = {k: v for k, v in options()["defaults"].items() if k != "model"}
    assert page == {k: v for k, v in defaults.items() if k != "force"}
