"""The layers of the core, the server and the sandbox (docs/architecture.md, "Layers of the
core", "... of the server", "... of the sandbox", the one home of each order): no module
imports from a layer above its own, every subpackage and top-level module is on the list,
and every module is reachable from a public name, a command, an entry point or a script the
package runs by its file name."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from rlv_imports import import_graph, module_files

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "src"
SERVER = ROOT / "server" / "src"
SANDBOX = ROOT / "sandbox" / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# where a user or a program starts: the public names, the command, the trainer adapters
PUBLIC = ["rl_verifier", "rl_verifier.testing", "rl_verifier.train", "rl_verifier.cli_support"]
PUBLIC += ["rl_verifier.internal", "rl_verifier.cli", "rl_verifier.__main__"]
PACKAGES = {  # layer list's section: (sources, top-level package, where users and the core start)
    "core": (CORE, "rl_verifier", PUBLIC),
    # builtins and launch: what the core's local training backend imports (docs/serve.md)
    "server": (
        SERVER,
        "rl_verifier_server",
        ["rl_verifier_server", "rl_verifier_server.builtins", "rl_verifier_server.launch"],
    ),
    "sandbox": (SANDBOX, "rl_verifier_sandbox", ["rl_verifier_sandbox"]),
}
EACH_PACKAGE = pytest.mark.parametrize("section", list(PACKAGES))


def layers(section: str = "core") -> dict[str, int]:
    """Each unit (a subpackage, or a module at the top) with its layer, 1 at the bottom."""
    text = ARCHITECTURE.read_text().split(f"## Layers of the {section}", 1)[1].split("\n## ", 1)[0]
    ranks: dict[str, int] = {}
    for number, names in re.findall(r"^(\d+)\. ([^:]*):", text, re.M):
        for name in re.findall(r"`([\w.]+)`", names):
            ranks[name] = int(number)
    return ranks


def modules(src: Path = CORE, top: str = "rl_verifier") -> dict[str, Path]:
    """Every module of ``top`` by dotted name (a package by its own name)."""
    return {n: p for n, p in module_files([src]).items() if n.split(".")[0] == top}


def graph(src: Path = CORE, top: str = "rl_verifier") -> dict[str, set[str]]:
    """Each module of ``top`` with the modules of ``top`` it imports."""
    ours = modules(src, top)
    return {n: imported & set(ours) for n, imported in import_graph([src]).items() if n in ours}


def unit(module: str) -> str:
    """The layer list's name for ``module``: its subpackage, or itself at the top."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def named_modules(module: str, known: dict[str, Path]) -> Iterator[str]:
    """Modules a module loads by name: strings that name one (``import_module``, ``-m``),
    in a package's ``__init__`` strings that name one of its submodules, and file names of
    a module beside it (a script it runs, ``Path(__file__).with_name("x.py")``)."""
    path = known[module]
    package = path.name == "__init__.py"
    beside = module if package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.split(":")[0]
            if value in known:
                yield value
            elif package and f"{module}.{value}" in known:
                yield f"{module}.{value}"
            elif value.endswith(".py") and f"{beside}.{value[:-3]}" in known:
                yield f"{beside}.{value[:-3]}"


def entry_points(src: Path) -> list[str]:
    """Modules the package's ``pyproject.toml`` names: scripts and entry points."""
    project = tomllib.loads((src.parent / "pyproject.toml").read_text())["project"]
    groups = [project.get("scripts", {}), *project.get("entry-points", {}).values()]
    return [target.split(":")[0] for group in groups for target in group.values()]


@EACH_PACKAGE
def test_every_unit_of_a_package_is_on_its_layer_list(section: str) -> None:
    src, top, _ = PACKAGES[section]
    units = {unit(name) for name in modules(src, top)}
    listed = set(layers(section))
    assert units == listed, (units - listed, listed - units)


@EACH_PACKAGE
def test_no_module_imports_from_a_layer_above_its_own(section: str) -> None:
    src, top, _ = PACKAGES[section]
    rank = layers(section)
    problems = [
        f"{module} (layer {rank[unit(module)]}, {unit(module)}) imports {target}, "
        f"layer {rank[unit(target)]}"
        for module, imported in graph(src, top).items()
        for target in sorted(imported)
        if rank[unit(target)] > rank[unit(module)]
    ]
    assert not problems, "\n".join(problems)


def test_nothing_in_the_core_imports_its_face() -> None:
    face = {name for name, number in layers().items() if number == max(layers().values())}
    problems = [
        f"{module} imports {target}"
        for module, imported in graph().items()
        if unit(module) not in face
        for target in sorted(imported)
        if unit(target) in face
    ]
    assert not problems, "\n".join(problems)


@EACH_PACKAGE
def test_every_module_is_reachable_from_a_public_name_or_a_command(section: str) -> None:
    src, top, public = PACKAGES[section]
    known = modules(src, top)
    imports = graph(src, top)
    integrations = [n for n in known if n.startswith(f"{top}.integrations.")]
    todo = [*public, f"{top}.__main__", *integrations, *entry_points(src)]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or module not in known:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages run first
        todo += [*imports[module], *named_modules(module, known)]
    assert not set(known) - seen, sorted(set(known) - seen)
