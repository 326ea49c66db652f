"""``rlv plugin new``: a third-party plugin package that installs and passes its tests."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from string import Template

from rl_verifier import __version__
from rl_verifier.errors import UserError

PYPROJECT = """[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "rl-verifier-$dist_name"
version = "0.1.0"
description = "$title verifier for rl-verifier."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["rl-verifier>=$core_version"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points.rl_verifier]
$name = "rl_verifier_$name.plugin"

[tool.hatch.build.targets.wheel]
packages = ["src/rl_verifier_$name"]
"""

README = """# rl-verifier-$dist_name

A verifier plugin for [rl-verifier](https://pypi.org/project/rl-verifier/).

    pip install -e .[test]
    rlv plugins            # lists '$name'
    pytest                 # contract tests from rl_verifier.testing
    rlv verify --verifier $name --tasks tasks.jsonl \\
        --completions completions.jsonl --out scores.jsonl

Edit `src/rl_verifier_$name/verifier.py`: `verify` returns `Verdict.ok(reward)` when it
judged the output, `Verdict.invalid(reason)` when the output is unusable, and
`Verdict.failed(message)` when the check itself could not run. Never score an
infrastructure failure as a wrong answer.
"""

INIT = '''"""$title verifier for rl-verifier."""

from rl_verifier_$name.verifier import ${cls}Verifier

__all__ = ["${cls}Verifier"]
'''

PLUGIN = '''"""Registers the verifier with rl-verifier (entry-point group ``rl_verifier``)."""

from collections.abc import Callable

from rl_verifier import Verifier, hookimpl

from rl_verifier_$name.verifier import ${cls}Verifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(${cls}Verifier)
'''

VERIFIER = '''"""The $name verifier: reward 1 when the answer holds the expected keyword."""

import re
import shutil
import tempfile

from pydantic import Field

from rl_verifier import Completion, Task, Verdict, Verifier, VerifierConfig


class ${cls}Config(VerifierConfig):
    case_sensitive: bool = Field(default=False, description="Match case exactly.")


class ${cls}Verifier(Verifier):
    """Reward 1 when the <answer> holds reference['keyword'], else 0."""

    name = "$name"
    Config = ${cls}Config
    reward_range = (0.0, 1.0)
    default_timeout_s = 5.0

    def verify(self, task: Task, completion: Completion) -> Verdict:
        config = self.config
        assert isinstance(config, ${cls}Config)
        keyword = task.reference.get("keyword")
        if not isinstance(keyword, str) or not keyword:
            return Verdict.failed("task reference has no 'keyword'")
        found = re.findall(r"<answer>(.*?)</answer>", completion.text(), flags=re.DOTALL)
        if not found:
            return Verdict.invalid("no <answer>...</answer> in the completion")
        answer = found[-1]
        if not config.case_sensitive:
            answer, keyword = answer.lower(), keyword.lower()
        return Verdict.ok(1.0 if keyword in answer else 0.0)
'''

TESTS = '''"""Contract tests from rl-verifier's test kit, plus this verifier's own cases."""

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract

from rl_verifier_$name import ${cls}Verifier

TASK = Task(id="t1", prompt="Name a colour.", reference={"keyword": "blue"})


class Test${cls}Contract(VerifierContract):
    verifier_class = ${cls}Verifier

    def cases(self) -> list[Case]:
        return [
            Case(TASK, "<answer>Blue</answer>", Status.OK, 1.0),
            Case(TASK, "<answer>red</answer>", Status.OK, 0.0),
            Case(TASK, "blue, but no tags", Status.INVALID),
        ]


def test_missing_keyword_is_an_error_not_a_wrong_answer() -> None:
    from rl_verifier.testing import score_once

    broken = Task(id="t2", prompt="?", reference={})
    [score] = score_once(${cls}Verifier(), [(broken, "<answer>blue</answer>")])
    assert score.status is Status.ERROR
'''

FILES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "src/rl_verifier_$name/__init__.py": INIT,
    "src/rl_verifier_$name/plugin.py": PLUGIN,
    "src/rl_verifier_$name/verifier.py": VERIFIER,
    "tests/test_$name.py": TESTS,
}


def create_plugin(name: str, directory: Path | None = None) -> Path:
    """Write the package for plugin ``name``; refuse to touch a non-empty directory."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise UserError(
            f"plugin name '{name}' must start with a lowercase letter and use only a-z, 0-9, _"
        )
    values = {
        "name": name,
        "dist_name": name.replace("_", "-"),
        "cls": "".join(part.capitalize() for part in name.split("_")),
        "title": name.replace("_", " ").capitalize(),
        "core_version": __version__,
    }
    target = directory or Path(f"rl-verifier-{values['dist_name']}")
    if target.exists() and any(target.iterdir()):
        raise UserError(f"{target} exists and is not empty")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".rlv-new-", dir=target.parent))
    try:
        for relative, text in FILES.items():
            path = staging / Template(relative).substitute(values)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(Template(text).substitute(values), encoding="utf-8")
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
