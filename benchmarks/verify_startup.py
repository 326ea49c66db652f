"""`rlv verify` start-up: the time to score one trivial sample from the shell.

Times, over fresh processes (median and best of --repeat runs), side by side:

- python -c pass:           the interpreter alone, the floor
- import rl_verifier:       the public namespace
- rlv --version:            the command's own start-up (click, plugin-free)
- rlv verify, inline:       one exact_match sample scored in the command's process
- rlv verify (default):     the same on the default process executor (a worker started)

Then where the time goes: `python -X importtime` of the inline run, the imports that cost
most (cumulative, top --top), and how many modules each top-level package brought in.

Run: .venv/bin/python benchmarks/verify_startup.py [--repeat N] [--top K]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

PYTHON = sys.executable


def timed(argv: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
    return times


def inputs(folder: Path) -> list[str]:
    task = {"id": "t1", "prompt": "2+2?", "verifier": "exact_match", "reference": {"answer": "4"}}
    (folder / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    completion = {"task_id": "t1", "completion": "4"}
    (folder / "completions.jsonl").write_text(json.dumps(completion) + "\n")
    return [
        "--tasks", str(folder / "tasks.jsonl"),
        "--completions", str(folder / "completions.jsonl"),
        "--out", str(folder / "scores.jsonl"),
    ]  # fmt: skip


def import_costs(argv: list[str], top: int) -> tuple[list[tuple[int, str]], Counter[str]]:
    """The costliest imports (cumulative µs) of one run, and modules per top-level package."""
    done = subprocess.run([PYTHON, "-X", "importtime", *argv], capture_output=True, text=True)
    rows: list[tuple[int, str]] = []
    packages: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        _, cumulative, name = line.removeprefix("import time:").split("|")
        if not cumulative.strip().isdigit():
            continue  # the header
        module = name.strip()
        packages[module.split(".")[0]] += 1
        if len(name) - len(name.lstrip()) == 1:  # imported by the program, not by a module
            rows.append((int(cumulative), module))
    return sorted(rows, reverse=True)[:top], packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = inputs(Path(tmp))
        verify = [PYTHON, "-m", "rl_verifier", "verify", "--verifier", "exact_match", *files]
        cases = {
            "python -c pass": [PYTHON, "-c", "pass"],
            "import rl_verifier": [PYTHON, "-c", "import rl_verifier"],
            "rlv --version": [PYTHON, "-m", "rl_verifier", "--version"],
            "rlv verify, inline": [*verify, "--executor", "inline"],
            "rlv verify (default)": verify,
        }
        print(f"{'what':<24}{'median s':>10}{'best s':>10}{'x python':>10}")
        floor = None
        for label, argv in cases.items():
            times = timed(argv, args.repeat)
            median = statistics.median(times)
            floor = floor or median
            print(f"{label:<24}{median:>10.3f}{min(times):>10.3f}{median / floor:>10.1f}")
        rows, packages = import_costs([*verify[1:], "--executor", "inline"], args.top)
    print(f"\nimports of one inline `rlv verify`, costliest first (cumulative ms), top {args.top}:")
    for micros, module in rows:
        print(f"{micros / 1000:>9.1f}  {module}")
    print("\nmodules imported, by top-level package:")
    for package, count in packages.most_common(args.top):
        print(f"{count:>6}  {package}")


if __name__ == "__main__":
    main()
