"""Wheels as users get them.

Every distribution builds a wheel on its own, with its package, entry points, ``py.typed``,
license and package-index metadata. Each plugin, installed alone from the wheelhouse (plus
the ``rl-verifier*`` wheels it declares; everything else from the package index) into a
fresh virtualenv, grades a real sample through that venv's own ``rlv verify``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
REPO_URL = "https://github.com/rl-verifier/rl-verifier"
PLUGINS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "plugins").iterdir() if p.is_dir())
DISTRIBUTIONS = ["core", "server", "sandbox", *PLUGINS]
REQUIRED_URLS = {"Homepage", "Repository", "Documentation", "Issues"}
INSTALL_TIMEOUT_S = 600
PIP = (sys.executable, "-m", "pip")
RUN_TIMEOUT_S = 180


def project_name(folder: str) -> str:
    with open(ROOT / folder / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["name"])


def package_of(folder: str) -> str:
    return "rl_verifier" if folder == "core" else f"rl_verifier_{Path(folder).name}"


@dataclass(frozen=True)
class Wheelhouse:
    """One wheel per distribution, built once per test session."""

    folder: Path
    wheels: dict[NormalizedName, Path]  # canonical distribution name -> wheel file

    def wheel(self, folder: str) -> Path:
        return self.wheels[canonicalize_name(project_name(folder))]

    def closure(self, folder: str) -> list[Path]:
        """The folder's wheel plus every rl-verifier* wheel it requires (not via extras)."""
        todo, seen = [canonicalize_name(project_name(folder))], set[NormalizedName]()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for line in metadata(self.wheels[name]).get_all("Requires-Dist") or []:
                req = Requirement(line)
                if req.marker is None and req.name.startswith("rl-verifier"):
                    todo.append(canonicalize_name(req.name))
        return [self.wheels[name] for name in sorted(seen)]


def metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(z.read(name).decode())


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Wheelhouse:
    out = tmp_path_factory.mktemp("wheelhouse")
    build = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
        + [f"./{d}" for d in DISTRIBUTIONS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    wheels = {canonicalize_name(w.name.split("-")[0]): w for w in out.glob("*.whl")}
    assert set(wheels) == {canonicalize_name(project_name(d)) for d in DISTRIBUTIONS}
    return Wheelhouse(out, wheels)


# ------------------------------------------------------------------------------------------
# What each wheel holds


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_wheel_has_package_entry_points_and_py_typed(folder: str, wheelhouse: Wheelhouse) -> None:
    wheel = wheelhouse.wheel(folder)
    names = zipfile.ZipFile(wheel).namelist()
    package = package_of(folder)
    assert f"{package}/__init__.py" in names
    assert f"{package}/py.typed" in names, "type checkers skip a package without py.typed"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    if folder == "core":
        assert "rlv = rl_verifier.cli:main" in text
    else:
        assert f"[rl_verifier]\n{Path(folder).name} = " in text
    assert not any("tests/" in n for n in names), "tests must not ship in the wheel"


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_wheel_metadata_for_the_package_index(folder: str, wheelhouse: Wheelhouse) -> None:
    wheel = wheelhouse.wheel(folder)
    meta = metadata(wheel)
    assert meta.get("License-Expression") == "Apache-2.0"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    with zipfile.ZipFile(wheel) as z:
        [license_file] = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        shipped = z.read(license_file).decode()
    assert shipped == (ROOT / "LICENSE").read_text()
    assert "Apache License" in shipped and "Version 2.0, January 2004" in shipped
    assert meta.get("Author") == "rl-verifier developers"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) >= REQUIRED_URLS, urls
    assert all(url.startswith(REPO_URL) for url in urls.values()), urls
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert meta.get("Description-Content-Type") == "text/markdown"
    description = meta.get_payload()
    assert isinstance(description, str)
    assert description.startswith(f"# {project_name(folder)}\n")
    assert relative_links(description) == []
    assert repo_only_commands(description) == []


CPU_TORCH = re.compile(
    r"^pip install (torch\S*) --index-url https://download\.pytorch\.org/whl/cpu\n"
    r"pip install rl-verifier-server$",
    re.M,
)


def test_server_description_says_how_to_get_cpu_only_torch() -> None:
    """Plain ``pip install rl-verifier-server`` resolves ~3 GB of CUDA wheels on Linux."""
    with open(ROOT / "server" / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    description = (ROOT / "server" / project["readme"]).read_text()  # the index page
    match = CPU_TORCH.search(description)
    assert match, "server/README.md: no CPU-only torch install before the server's"
    wanted = Requirement(match.group(1))
    declared = next(Requirement(r) for r in project["dependencies"] if r.startswith("torch"))
    pins = [spec.version for spec in wanted.specifier if spec.operator == "=="]
    assert wanted.name == "torch" and pins, wanted  # the pinned build the project uses
    assert all(declared.specifier.contains(pin) for pin in pins), (wanted, declared)


LINK_TARGET = re.compile(  # inline link, reference definition, HTML attribute
    r"\]\(\s*<?([^)\s>]*)|^ {0,3}\[[^\]]+\]:\s*(\S+)|(?:href|src)=[\"']([^\"']*)", re.M
)
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`+[^`]+`+")
REPO_PATH = re.compile(
    r"(?<![\w./~-])(?:\.\.?/|(?:core|server|sandbox|plugins|docs|examples|benchmarks|tests|"
    r"tools|src)/)"
)
REPO_COMMAND = re.compile(r"^\s*(?:\$\s*)?make\s|\bpip install (?:-e|--editable)\b|\.venv/", re.M)


def relative_links(markdown: str) -> list[str]:
    """Link targets and bare repository paths that break once the text is on a package index."""
    prose = FENCE.sub("", markdown)
    targets = [next(g for g in m.groups() if g is not None) for m in LINK_TARGET.finditer(prose)]
    bad = [t for t in targets if not t.startswith("https://")]
    unlinked = LINK.sub("", markdown)  # a linked path is fine: its target is absolute
    return bad + [m.group(0) for m in REPO_PATH.finditer(unlinked)]


def repo_only_commands(markdown: str) -> list[str]:
    """Commands that work only in a checkout (make targets, editable installs, .venv paths)."""
    code = [m.group(0) for m in FENCE.finditer(markdown)]
    code += [m.group(0).strip("`") for m in INLINE_CODE.finditer(FENCE.sub("", markdown))]
    code += [line for line in markdown.splitlines() if line.startswith("    ")]
    return [c for c in code if REPO_COMMAND.search(c)]


@pytest.mark.parametrize(
    ("markdown", "links", "commands"),
    [
        ("See [the docs](docs/serve.md).", 1, 0),
        ("See [core](../../core) and `docs/sandbox.md`.", 2, 0),
        ("See [docs](https://example.org/docs/a.md) and [`tests/x.py`](https://e.org/x).", 0, 0),
        ("```\npip install -e core\nmake demo\n```", 0, 1),
        ("Run `make test`, not `make`-style prose; make sure it works.", 0, 1),
        ("Paths `/tests/pytest.ini` and `~/.cache/rl-verifier/` are not in the repo.", 0, 0),
    ],
)
def test_description_checks_catch_what_breaks_on_an_index(
    markdown: str, links: int, commands: int
) -> None:
    assert len(relative_links(markdown)) == links
    assert len(repo_only_commands(markdown)) == commands


# ------------------------------------------------------------------------------------------
# Each plugin alone in a fresh venv


@dataclass(frozen=True)
class Venv:
    """A fresh virtualenv holding one distribution and what it requires."""

    path: Path
    work: Path  # a scratch folder to run its commands in

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        """The caller's environment without its venv, Python or rl-verifier settings."""
        drop = ("RLV_", "PYTHON", "VIRTUAL_ENV", "TINKER_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        outer = str(Path(sys.executable).parent)
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != outer]
        env["PATH"] = os.pathsep.join([str(self.bin), *path])
        return {**env, **extra}

    def run(self, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        exe = str(self.bin / argv[0])
        return subprocess.run(
            [exe, *argv[1:]],
            cwd=self.work,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )

    def verify(
        self, tasks: list[dict[str, Any]], completions: list[dict[str, Any]], *args: str
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """``rlv verify`` on these rows; the score rows by (task_id, sample_index)."""
        write_jsonl(self.work / "tasks.jsonl", tasks)
        write_jsonl(self.work / "completions.jsonl", completions)
        out = self.work / "scores.jsonl"
        out.unlink(missing_ok=True)
        done = self.run(
            "rlv", "verify", "--tasks", "tasks.jsonl", "--completions", "completions.jsonl",
            "--out", str(out), *args,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        return {(r["task_id"], r["sample_index"]): r for r in rows}

    def plugins(self) -> dict[str, dict[str, Any]]:
        """``rlv plugins --json`` by plugin name; every plugin must have loaded."""
        done = self.run("rlv", "plugins", "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        listing = {p["name"]: p for p in json.loads(done.stdout)}
        assert all(p["state"] == "loaded" for p in listing.values()), listing
        return listing


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def venv_alone(wheelhouse: Wheelhouse, tmp_path: Path) -> Callable[..., Venv]:
    """``venv_alone(folder, *requirements)``: a fresh venv with that distribution alone."""

    def make(folder: str, *requirements: str) -> Venv:
        venv = Venv(tmp_path / "venv", tmp_path / "work")
        venv.work.mkdir()
        wheels = [*map(str, wheelhouse.closure(folder)), *requirements]
        steps = [
            [sys.executable, "-m", "venv", "--without-pip", str(venv.path)],
            # The outer pip installs into the venv (no pip bootstrap per venv). The pip
            # configuration (constraints, find-links, indexes, cache) applies as for any user.
            [*PIP, "--python", str(venv.bin / "python"), "install", "-q", "--no-compile", *wheels],
        ]
        for argv in steps:
            done = subprocess.run(
                argv,
                cwd=venv.work,
                env=venv.env(),
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        return venv

    return make


def distributions(listing: dict[str, dict[str, Any]]) -> set[str]:
    return {p["distribution"] for p in listing.values()}


def statuses(rows: dict[tuple[str, int], dict[str, Any]]) -> dict[tuple[str, int], Any]:
    return {key: (r["status"], pytest.approx(r["reward"], abs=1e-4)) for key, r in rows.items()}


@pytest.mark.slow
def test_core_alone_grades_with_its_builtin_verifiers(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("core")
    assert distributions(venv.plugins()) == {"rl-verifier"}
    tasks = [
        {"id": "capital", "prompt": "Capital of France?", "verifier": "exact_match",
         "reference": {"answers": ["Paris"]}},
        {"id": "tagged", "prompt": "Answer in tags.", "verifier": "format", "reference": {}},
    ]  # fmt: skip
    completions = [
        {"task_id": "capital", "completion": "<answer>paris</answer>"},
        {"task_id": "capital", "completion": "<answer>Lyon</answer>"},
        {"task_id": "tagged", "completion": "Thinking... <answer>42</answer>"},
        {"task_id": "tagged", "completion": "42"},
    ]
    assert statuses(venv.verify(tasks, completions)) == {
        ("capital", 0): ("ok", 1.0),
        ("capital", 1): ("ok", 0.0),
        ("tagged", 0): ("ok", 1.0),
        ("tagged", 1): ("ok", 0.0),
    }


@pytest.mark.slow
def test_calibration_alone_scores_a_known_probability(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("plugins/calibration")
    assert distributions(venv.plugins()) == {"rl-verifier", "rl-verifier-calibration"}
    tasks = [{"id": "rain", "prompt": "Rain tomorrow?", "verifier": "calibration",
              "reference": {"outcome": 1}}]  # fmt: skip
    completions = [
        {"task_id": "rain", "completion": "<probability>0.7</probability>"},
        {"task_id": "rain", "completion": "Probability: 20%"},
        {"task_id": "rain", "completion": "No idea."},
    ]
    rows = venv.verify(tasks, completions, "--verifier", "calibration", "--config", "rule=brier")
    assert statuses(rows) == {
        ("rain", 0): ("ok", 1 - 0.3**2),
        ("rain", 1): ("ok", 1 - 0.8**2),
        ("rain", 2): ("invalid", -0.1),
    }


@pytest.mark.slow
def test_math_alone_grades_answers_without_torch(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("plugins/math")
    assert distributions(venv.plugins()) == {"rl-verifier", "rl-verifier-math"}
    tasks = [
        {"id": "half", "prompt": "What is 1/4 + 1/4?", "verifier": "math",
         "reference": {"answer": "\\frac{1}{2}"}},
        {"id": "clips", "prompt": "How many clips?", "verifier": "math",
         "reference": {"answer": "48/2 = <<48/2=24>>24 in May.\n#### 72"}},
    ]  # fmt: skip
    completions = [
        {"task_id": "half", "completion": "So it is $\\boxed{0.5}$."},
        {"task_id": "half", "completion": "\\boxed{\\frac{1}{3}}"},
        {"task_id": "half", "completion": "\\boxed{0} \\boxed{0.5} \\boxed{1}"},
        {"task_id": "clips", "completion": "48 + 24 = 72\n#### 72"},
        {"task_id": "clips", "completion": "#### 48 + 48/2"},
        {"task_id": "clips", "completion": "No idea."},
    ]
    assert statuses(venv.verify(tasks, completions)) == {
        ("half", 0): ("ok", 1.0),
        ("half", 1): ("ok", 0.0),
        ("half", 2): ("ok", 0.0),  # several boxed answers
        ("clips", 0): ("ok", 1.0),
        ("clips", 1): ("ok", 0.0),  # left for sympy to evaluate
        ("clips", 2): ("invalid", 0.0),
    }
    # math-verify and its dependencies must not pull in torch
    probe = venv.run("python", "-c", "import importlib.util as u; print(u.find_spec('torch'))")
    assert probe.stdout.strip() == "None", probe.stdout + probe.stderr


ADD_TESTS = """\
from solution import add


def test_small():
    assert add(2, 3) == 5


def test_negative():
    assert add(-2, -3) == -5
"""


def python(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.slow
@pytest.mark.requires("bwrap")
def test_pytest_alone_grades_code_in_the_sandbox(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("plugins/pytest")
    assert distributions(venv.plugins()) == {
        "rl-verifier", "rl-verifier-sandbox", "rl-verifier-pytest",
    }  # fmt: skip
    tasks = [
        {"id": "add", "prompt": "Write add(a, b).", "verifier": "pytest",
         "reference": {"tests": ADD_TESTS}},
        {"id": "largest", "prompt": "def largest(xs):", "verifier": "pytest",
         "reference": {"test": "def check(candidate):\n    assert candidate([1, 5, 3]) == 5\n",
                       "entry_point": "largest"}},
    ]  # fmt: skip
    completions = [
        {"task_id": "add", "completion": python("def add(a, b):\n    return a + b")},
        {"task_id": "add", "completion": python("def add(a, b):\n    return a - b")},
        {"task_id": "largest", "completion": python("def largest(xs):\n    return max(xs)")},
        {"task_id": "largest", "completion": python("def largest(xs):\n    return xs[0]")},
    ]
    rows = venv.verify(tasks, completions)
    assert statuses(rows) == {
        ("add", 0): ("ok", 1.0),
        ("add", 1): ("ok", 0.0),
        ("largest", 0): ("ok", 1.0),
        ("largest", 1): ("ok", 0.0),
    }, rows
    assert rows[("add", 0)]["info"]["mode"] == "two-process"  # the default for pytest files
    assert rows[("largest", 0)]["info"]["mode"] == "two-process"
    doctor = venv.run("rlv", "sandbox", "doctor")
    fork_server = next(line for line in doctor.stdout.splitlines() if "python_fork_server" in line)
    assert fork_server.split()[0] == "ok", doctor.stdout


@pytest.mark.slow
def test_retrieval_alone_grades_answer_and_citations(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("plugins/retrieval")
    assert distributions(venv.plugins()) == {"rl-verifier", "rl-verifier-retrieval"}
    docs = [
        {"id": "d1", "title": "France", "text": "Paris is the capital of France."},
        {"id": "d2", "title": "Spain", "text": "Madrid is the capital of Spain."},
    ]
    tasks = [{"id": "fr", "prompt": "Capital of France? Cite.", "verifier": "retrieval",
              "reference": {"answers": ["Paris"], "support": ["d1"], "docs": docs}}]  # fmt: skip
    completions = [
        {"task_id": "fr", "completion": "Paris [d1]"},
        {"task_id": "fr", "completion": "Madrid [d1]"},  # cites support, wrong answer: 0.4
        {"task_id": "fr", "completion": "Paris [d9]"},  # d9 exists nowhere: hallucinated
    ]
    assert statuses(venv.verify(tasks, completions)) == {
        ("fr", 0): ("ok", 1.0),
        ("fr", 1): ("ok", 0.4),
        ("fr", 2): ("ok", 0.1),
    }


SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def search_episode(answer: str) -> list[dict[str, Any]]:
    call = '<tool_call>{"name": "search", "arguments": {"query": "Eiffel Tower"}}</tool_call>'
    passages = [{"id": "r1", "text": "The Eiffel Tower was completed in 1889."}]
    return [
        {"role": "assistant", "content": call},
        {"role": "tool", "name": "search", "content": json.dumps(passages)},
        {"role": "assistant", "content": answer},
    ]


@pytest.mark.slow
def test_tool_calls_alone_grades_a_trajectory(venv_alone: Callable[..., Venv]) -> None:
    venv = venv_alone("plugins/tool_calls")
    assert distributions(venv.plugins()) == {"rl-verifier", "rl-verifier-tool-calls"}
    tasks = [{"id": "eiffel", "prompt": "When was the Eiffel Tower completed?",
              "verifier": "tool_calls", "reference": {"answers": ["1889"],
                                                      "tools": [SEARCH_TOOL]}}]  # fmt: skip
    completions = [
        {"task_id": "eiffel", "completion": search_episode("1889 [r1]")},
        {"task_id": "eiffel", "completion": search_episode("1890 [r1]")},
    ]
    assert statuses(venv.verify(tasks, completions)) == {
        ("eiffel", 0): ("ok", 1.0),
        ("eiffel", 1): ("ok", 0.3),
    }


@pytest.mark.slow
def test_search_env_alone_registers_its_environment_and_task_sets(
    venv_alone: Callable[..., Venv], wheelhouse: Wheelhouse
) -> None:
    venv = venv_alone("plugins/search_env")
    listing = venv.plugins()
    assert distributions(listing) == {
        "rl-verifier", "rl-verifier-retrieval", "rl-verifier-search-env",
    }  # fmt: skip
    assert listing["search_env"]["environments"] == ["search_tools"]
    assert {"fictopedia", "search-example"} <= set(listing["search_env"]["task_sets"])
    names = zipfile.ZipFile(wheelhouse.wheel("plugins/search_env")).namelist()
    assert any(n.startswith("rl_verifier_search_env/data/") for n in names)


LEAN_TASK = {
    "id": "one-add-one",
    "prompt": "Prove 1 + 1 = 2.",
    "verifier": "lean",
    "reference": {"statement": "theorem one_add_one : 1 + 1 = 2", "header": "import Mathlib"},
}


@pytest.mark.slow
def test_lean_alone_screens_exploits_and_names_what_is_missing(
    venv_alone: Callable[..., Venv],
) -> None:
    venv = venv_alone("plugins/lean")
    assert distributions(venv.plugins()) == {
        "rl-verifier", "rl-verifier-sandbox", "rl-verifier-lean",
    }  # fmt: skip
    completions = [
        {"task_id": "one-add-one", "completion": "```lean\nsorry\n```"},
        {"task_id": "one-add-one", "completion": "```lean\nby norm_num\n```"},
    ]
    rows = venv.verify([LEAN_TASK], completions)
    assert statuses(rows) == {("one-add-one", 0): ("ok", 0.0), ("one-add-one", 1): ("error", 0.0)}
    assert rows[("one-add-one", 0)]["info"]["reason"].startswith("banned"), rows
    # No Lean toolchain here: an honest proof is never scored as wrong; the error says what to
    # install.
    error = rows[("one-add-one", 1)]["error"]
    assert "Lean" in error and "elan" in error, error


SERVER_CLIENT = """
import json, sys
import tinker
from tinker import types

client = tinker.ServiceClient(base_url=sys.argv[1], api_key="tml-local")
training = client.create_lora_training_client(base_model="rlv/tiny-chat", rank=4).result()
tokens = training.get_tokenizer().encode("Hello", add_special_tokens=False)
sampler = training.save_weights_and_get_sampling_client().result()
result = sampler.sample(
    prompt=types.ModelInput.from_ints(tokens), num_samples=1,
    sampling_params=types.SamplingParams(max_tokens=4, temperature=1.0, seed=0),
).result()
print(json.dumps({"tokens": list(result.sequences[0].tokens)}))
"""


@pytest.mark.slow
def test_server_alone_serves_the_builtin_model(
    venv_alone: Callable[..., Venv], tmp_path: Path
) -> None:
    venv = venv_alone("server", "torch==2.13.0")
    listing = venv.plugins()
    assert distributions(listing) == {"rl-verifier", "rl-verifier-server"}
    assert listing["server"]["commands"] == ["export", "serve"]
    help_text = venv.run("rlv", "serve", "--help")
    assert help_text.returncode == 0 and "--port" in help_text.stdout, help_text.stderr
    cache = tmp_path / "cache"
    port_file = tmp_path / "port"
    log = tmp_path / "serve.log"
    with open(log, "w") as log_file:
        server = subprocess.Popen(
            [str(venv.bin / "rlv"), "serve", "--port", "0", "--port-file", str(port_file),
             "--data-dir", str(tmp_path / "data"), "--device", "cpu", "--preload", ""],
            cwd=venv.work, env=venv.env(RLV_CACHE_DIR=str(cache)),
            stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not port_file.exists():
            assert server.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "rlv serve did not start listening"
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        client = venv.run("python", "-c", SERVER_CLIENT, url)
        assert client.returncode == 0, client.stderr[-3000:]
        assert len(json.loads(client.stdout.splitlines()[-1])["tokens"]) >= 1
        assert list(cache.glob("models/tiny-chat-*/model.safetensors")), "built in RLV_CACHE_DIR"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
