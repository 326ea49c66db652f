"""The core's layers (docs/architecture.md, "Layers of the core", the one home of the order):
no module imports from a layer above its own, every subpackage and top-level module is on
the list, and every module is reachable from a public name, a command or an entry point."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "core" / "src" / "rl_verifier"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# where a user or a program starts: the public names, the command, the trainer adapters
PUBLIC = ["rl_verifier", "rl_verifier.testing", "rl_verifier.train", "rl_verifier.cli_support"]
PUBLIC += ["rl_verifier.internal", "rl_verifier.cli", "rl_verifier.__main__"]


def layers() -> dict[str, int]:
    """Each unit (a subpackage, or a module at the top) with its layer, 1 at the bottom."""
    text = ARCHITECTURE.read_text().split("## Layers of the core", 1)[1].split("\n## ", 1)[0]
    ranks: dict[str, int] = {}
    for number, names in re.findall(r"^(\d+)\. ([^:]*):", text, re.M):
        for name in re.findall(r"`([\w.]+)`", names):
            ranks[name] = int(number)
    return ranks


def modules() -> dict[str, Path]:
    """Every module of the core by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def unit(module: str) -> str:
    """The layer list's name for ``module``: its subpackage, or itself at the top."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of each runtime import of a core module, names of submodules included."""
    known = modules()
    tree = ast.parse(path.read_text(), str(path))
    typing_only = type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            sub = [f"{node.module}.{alias.name}" for alias in node.names]
            targets = [node.module] + [s for s in sub if s in known]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "rl_verifier":
                yield node.lineno, target


def named_modules(module: str, path: Path) -> Iterator[str]:
    """Modules a module loads by name: strings that name one (``import_module``, ``-m``),
    and in a package's ``__init__``, strings that name one of its submodules."""
    known = modules()
    package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.split(":")[0]
            if value in known:
                yield value
            elif package and f"{module}.{value}" in known:
                yield f"{module}.{value}"


def entry_points() -> list[str]:
    project = tomllib.loads((ROOT / "core" / "pyproject.toml").read_text())["project"]
    groups = [project.get("scripts", {}), *project.get("entry-points", {}).values()]
    return [target.split(":")[0] for group in groups for target in group.values()]


def test_every_unit_of_the_core_is_on_the_layer_list() -> None:
    units = {unit(name) for name in modules()}
    assert units == set(layers()), (units - set(layers()), set(layers()) - units)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    rank = layers()
    problems = []
    for module, path in modules().items():
        for line, target in imports(module, path):
            if rank[unit(target)] > rank[unit(module)]:
                where = f"{path.relative_to(ROOT)}:{line}"
                problems.append(
                    f"{where}: layer {rank[unit(module)]} ({unit(module)}) imports {target}, "
                    f"layer {rank[unit(target)]}"
                )
    assert not problems, "\n".join(problems)


def test_nothing_in_the_core_imports_its_face() -> None:
    face = {name for name, number in layers().items() if number == max(layers().values())}
    problems = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}"
        for module, path in modules().items()
        if unit(module) not in face
        for line, target in imports(module, path)
        if unit(target) in face
    ]
    assert not problems, "\n".join(problems)


def test_every_module_is_reachable_from_a_public_name_or_a_command() -> None:
    known = modules()
    integrations = [n for n in known if n.startswith("rl_verifier.integrations.")]
    todo = [*PUBLIC, *integrations, *entry_points()]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or module not in known:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages run first
        todo += [target for _, target in imports(module, known[module])]
        todo += list(named_modules(module, known[module]))
    assert not set(known) - seen, sorted(set(known) - seen)
