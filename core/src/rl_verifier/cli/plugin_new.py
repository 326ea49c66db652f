"""``rlv plugin new``: a third-party plugin package that installs and passes its tests.

The package passes ``mypy --strict`` and ``ruff check`` as generated, and ships sample
``tasks.jsonl``/``completions.jsonl`` that its README's ``rlv verify`` line scores.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from string import Template

from rl_verifier.base.errors import UserError
from rl_verifier.base.version import __version__
from rl_verifier.files.atomic import publish_directory

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
DIST_PREFIXES = ("rl-verifier-", "rl_verifier_")

PYPROJECT = """[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "$dist"
version = "0.1.0"
description = "$title verifier for rl-verifier."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["rl-verifier>=$core_version"]

[project.optional-dependencies]
test = ["pytest>=8", "mypy>=1.10", "ruff>=0.5"]

# The entry-point name is the plugin's name in `rlv plugins`.
[project.entry-points.rl_verifier]
$name = "$module.plugin"

[tool.hatch.build.targets.wheel]
packages = ["src/$module"]

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.mypy]
strict = true
files = ["src", "tests"]

[tool.ruff]
line-length = 100
src = ["src"]

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP", "SIM", "RUF"]
"""

README = """# $dist

A verifier plugin for [rl-verifier](https://pypi.org/project/rl-verifier/): reward 1
when the `<answer>` of a completion holds the task's `reference.keyword`.

| what | name |
|------|------|
| distribution (`pip install`) | `$dist` |
| import package | `$module` |
| verifier (`--verifier`, reward specs) | `$name` |
| plugin (entry point, `rlv plugins`) | `$name` |

The verifier name uses `_` where the distribution uses `-`: verifier names appear
in reward specs such as `0.8*$name + 0.2*format`, where `-` means minus.

## Try it

Run these in this directory:

```sh
pip install -e ".[test]"
rlv plugins
rlv verify --verifier $name --tasks tasks.jsonl --completions completions.jsonl --out scores.jsonl
pytest
mypy
ruff check .
```

`rlv plugins` lists `$name`. `rlv verify` scores the four sample completions in
`completions.jsonl` against `tasks.jsonl` and writes `scores.jsonl`: in file order,
reward 1 (`ok`), status `invalid` (no `<answer>` tag), reward 0 (`ok`) and reward 1
(`ok`, a chat-shaped completion).

## Make it yours

Edit `src/$module/verifier.py`.
`verify` returns `Verdict.ok(reward)` when it judged the output,
`Verdict.invalid(reason)` when the output is unusable, and `Verdict.errored(message)`
when the check itself could not run (here: a task without a keyword). Never score an
infrastructure failure as a wrong answer. The tests in `tests/` run rl-verifier's
contract tests against the verifier; add your own cases. The guide to everything a
verifier can do:
[Writing a verifier plugin](https://github.com/rl-verifier/rl-verifier/blob/main/docs/writing-plugins.md).
"""

TASKS = """\
{"id": "sky", "prompt": "What colour is a clear sky? Answer inside <answer></answer>.", \
"verifier": "$name", "reference": {"keyword": "blue"}}
{"id": "fruit", "prompt": "Name a long yellow fruit. Answer inside <answer></answer>.", \
"verifier": "$name", "reference": {"keyword": "banana"}}
"""

COMPLETIONS = """\
{"task_id": "sky", "completion": "<answer>Blue</answer>"}
{"task_id": "sky", "completion": "The sky is blue."}
{"task_id": "fruit", "completion": "<answer>a lemon</answer>"}
{"task_id": "fruit", "completion": [{"role": "assistant", "content": "<answer>Banana</answer>"}]}
"""

INIT = '''"""$title verifier for rl-verifier."""

from $module.verifier import ${cls}Config, ${cls}Verifier

__all__ = ["${cls}Config", "${cls}Verifier"]
'''

PLUGIN = '''"""Registers the verifier with rl-verifier (entry-point group ``rl_verifier``)."""

from rl_verifier import VerifierRegistrar, hookimpl

from $module.verifier import ${cls}Verifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(${cls}Verifier)
'''

VERIFIER = '''"""The $name verifier: reward 1 when the answer holds the expected keyword."""

import re

from pydantic import Field
from rl_verifier import Completion, Task, Verdict, Verifier, VerifierConfig

ANSWER = re.compile(r"<answer>(.*?)</answer>", flags=re.DOTALL)


class ${cls}Config(VerifierConfig):
    case_sensitive: bool = Field(default=False, description="Match case exactly.")


class ${cls}Verifier(Verifier[${cls}Config]):
    """Reward 1 when the <answer> holds reference['keyword'], else 0."""

    name = "$name"
    reward_range = (0.0, 1.0)
    default_timeout_s = 5.0

    def verify(self, task: Task, completion: Completion) -> Verdict:
        keyword = task.reference.get("keyword")
        if not isinstance(keyword, str) or not keyword:
            return Verdict.errored("task reference has no 'keyword'")
        found = ANSWER.findall(completion.text())
        if not found:
            return Verdict.invalid("no <answer>...</answer> in the completion")
        answer: str = found[-1]
        seen, wanted = answer, keyword
        if not self.config.case_sensitive:
            seen, wanted = seen.lower(), wanted.lower()
        return Verdict.ok(1.0 if wanted in seen else 0.0, answer=answer)
'''

TESTS = '''"""Contract tests from rl-verifier's test kit, plus this verifier's own cases."""

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract, score_once

from $module import ${cls}Verifier

TASK = Task(id="t1", prompt="Name a colour.", reference={"keyword": "blue"})


class Test${cls}Contract(VerifierContract):
    verifier_class = ${cls}Verifier

    def cases(self) -> list[Case]:
        return [
            Case(TASK, "<answer>Blue</answer>", Status.OK, 1.0),
            Case(TASK, "<answer>red</answer>", Status.OK, 0.0),
            Case(TASK, "blue, but no tags", Status.INVALID),
        ]


def test_case_sensitive_setting() -> None:
    verifier = ${cls}Verifier({"case_sensitive": True})
    [score] = score_once(verifier, [(TASK, "<answer>Blue</answer>")])
    assert (score.status, score.reward) == (Status.OK, 0.0)


def test_missing_keyword_is_an_error_not_a_wrong_answer() -> None:
    broken = Task(id="t2", prompt="?", reference={})
    [score] = score_once(${cls}Verifier(), [(broken, "<answer>blue</answer>")])
    assert score.status is Status.ERROR
'''

FILES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "tasks.jsonl": TASKS,
    "completions.jsonl": COMPLETIONS,
    "src/$module/__init__.py": INIT,
    "src/$module/py.typed": "",
    "src/$module/plugin.py": PLUGIN,
    "src/$module/verifier.py": VERIFIER,
    "tests/test_$name.py": TESTS,
}


@dataclass(frozen=True)
class PluginNames:
    """The names of one plugin: ``json-schema`` gives ``rl-verifier-json-schema``,
    ``rl_verifier_json_schema`` and the verifier and entry point ``json_schema``."""

    name: str
    dist: str
    module: str
    cls: str
    title: str

    @classmethod
    def parse(cls, raw: str) -> PluginNames:
        """Accept ``json-schema``, ``json_schema`` or the full ``rl-verifier-json-schema``."""
        text = raw.strip()
        for prefix in DIST_PREFIXES:
            text = text.removeprefix(prefix)
        if not NAME_PATTERN.fullmatch(text):
            raise UserError(
                f"plugin name '{raw}' must start with a lowercase letter and use only a-z, 0-9 "
                "and single '-' or '_' between words (e.g. json-schema)"
            )
        words = re.split(r"[-_]", text)
        name = "_".join(words)
        return cls(
            name=name,
            dist="rl-verifier-" + "-".join(words),
            module="rl_verifier_" + name,
            cls="".join(word.capitalize() for word in words),
            title=" ".join(words).capitalize(),
        )


def name_conflicts(names: PluginNames) -> list[str]:
    """Why ``names`` would clash with the core or an installed plugin (empty: free)."""
    from rl_verifier.discovery.plugins import get_plugins

    plugins = get_plugins()
    reasons = []
    if names.name in plugins.registry:
        owner = plugins.registry.get(names.name).plugin
        if owner == "builtin":
            reasons.append(f"'{names.name}' is a built-in verifier")
        else:
            reasons.append(f"verifier '{names.name}' comes from plugin '{owner}'")
    if names.name in plugins.infos:
        reasons.append(f"an installed plugin is named '{names.name}'")
    with contextlib.suppress(metadata.PackageNotFoundError):
        reasons.append(f"{names.dist} {metadata.version(names.dist)} is installed")
    if importlib.util.find_spec(names.module) is not None:
        reasons.append(f"module {names.module} is importable")
    return reasons


def create_plugin(name: str, directory: Path | None = None) -> Path:
    """Write the package for plugin ``name``; refuse a taken name or a non-empty directory."""
    names = PluginNames.parse(name)
    reasons = name_conflicts(names)
    if reasons:
        raise UserError(
            f"cannot create plugin '{names.name}': " + "; ".join(reasons) + "; choose another name"
        )
    values = {
        "name": names.name,
        "dist": names.dist,
        "module": names.module,
        "cls": names.cls,
        "title": names.title,
        "core_version": __version__,
    }
    target = directory or Path(names.dist)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{target} exists and is not an empty directory")
    with publish_directory(target) as staging:  # replaces an empty folder there
        for relative, text in FILES.items():
            path = staging / Template(relative).substitute(values)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(Template(text).substitute(values), encoding="utf-8")
    return target
