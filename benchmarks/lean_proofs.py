"""Throughput and latency of the ``lean`` verifier, with and without environment reuse,
and the cost of the file backend's kernel replay.

"reuse": a pool of REPLs (one per CPU by default), each loading the header once and
checking every proof against that environment. "fresh": ``max_uses=1``, so every proof
starts a new REPL and loads the header again (what a per-file `lean` run costs).
"file": the per-proof file backend, statement first, without replay (one `lean` process per
proof) and with replay (statement module, answer module, checker: three processes per proof,
each loading the header).

Runs against the fake toolchain of the test suite (header load simulated by
``--fake-header-s``, paid by every process that loads the header; Mathlib's real import takes
seconds) and, where `lake` and the REPL are installed (`rlv lean doctor`), against real Lean
on the ``lean-example`` tasks (the file backend there needs the checker too).

Run: .venv/bin/python benchmarks/lean_proofs.py [--proofs N] [--pool P] [--fake-header-s S]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rl_verifier.base.contracts import Completion, Task
from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.filecheck import FileTools
from rl_verifier_lean.isolation import choose_sandbox, sandbox_reason
from rl_verifier_lean.locate import LeanLaunch, LeanMissing, file_launch, repl_launch, replay_argv
from rl_verifier_lean.tasks import example_proof, example_tasks
from rl_verifier_lean.verifier import LeanVerifier

FAKE = Path(__file__).resolve().parents[1] / "plugins" / "lean" / "tests" / "fake_repl.py"


@functools.cache
def fake_library() -> str:
    folder = tempfile.mkdtemp(prefix="rlv-bench-lib-")
    (Path(folder) / "Mathlib.olean").write_bytes(b"olean")
    os.chmod(folder, 0o755)
    os.chmod(Path(folder) / "Mathlib.olean", 0o644)
    return folder


def make_verifier(config: dict[str, Any]) -> LeanVerifier:
    """A verifier; with ``fake_file`` set, the file backend runs the fake `lean`/checker."""
    fake = config.pop("fake_file", None)
    verifier = LeanVerifier(config)
    if fake is not None:
        cfg = verifier.settings
        library = fake_library()  # the tasks import Mathlib: a stand-in .olean on LEAN_PATH
        argv = ["python", str(FAKE), "lean", "--json", *fake]
        lean = LeanLaunch(argv, None, {"LEAN_PATH": library}, [str(FAKE), library])
        checker = ["python", str(FAKE), "leanchecker", *fake] if cfg.replay_on else None
        verifier._file_backend = (choose_sandbox(cfg.sandbox), FileTools(lean, checker))
    return verifier


async def run(
    config: dict[str, Any], items: list[tuple[Task, Completion]], sequential: bool = False
) -> dict[str, float]:
    """Check ``items`` all at once (throughput) or one after another (latency alone)."""
    verifier = make_verifier(dict(config))
    latencies: list[float] = []

    async def one(task: Task, completion: Completion) -> None:
        start = time.perf_counter()
        verdict = await verifier.verify(task, completion)
        latencies.append(time.perf_counter() - start)
        assert verdict.reward == 1.0, verdict

    start = time.perf_counter()
    try:
        if sequential:
            for t, c in items:
                await one(t, c)
        else:
            await asyncio.gather(*(one(t, c) for t, c in items))
    finally:
        await verifier.close()
    wall = time.perf_counter() - start
    latencies.sort()
    cpus = min(int(config["pool_size"]), os.cpu_count() or 1)
    return {
        "proofs_per_s": len(items) / wall,
        "proofs_per_s_per_cpu": len(items) / wall / cpus,
        "p50_ms": 1000 * statistics.median(latencies),
        "p90_ms": 1000 * latencies[int(0.9 * (len(latencies) - 1))],
        "wall_s": wall,
    }


def workload(n: int) -> list[tuple[Task, Completion]]:
    tasks = example_tasks()
    items = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        text = f"```lean\n{example_proof(task.id)}\n```"
        items.append((task, Completion(task_id=task.id, completion=text)))
    return items


def report(label: str, figures: dict[str, float]) -> None:
    print(
        f"{label:<28} {figures['proofs_per_s']:8.1f} proofs/s  "
        f"{figures['proofs_per_s_per_cpu']:8.1f} /s/CPU  "
        f"p50 {figures['p50_ms']:8.1f} ms  p90 {figures['p90_ms']:8.1f} ms  "
        f"({figures['wall_s']:.2f} s)"
    )


def backends(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    fake_cmd = ["python", str(FAKE), "--header-s", str(args.fake_header_s)]
    found: list[tuple[str, dict[str, Any]]] = [
        ("fake, no sandbox", {"repl_command": fake_cmd, "sandbox": "none"})
    ]
    isolation, why = sandbox_reason("auto")
    if isolation == "bwrap":
        found.append(("fake, bwrap", {"repl_command": fake_cmd, "sandbox": "bwrap"}))
    else:
        print(f"bwrap sandbox: not available here ({why})")
    try:
        repl_launch(LeanConfig(), sandboxed=False)
        found.append(("lean", {}))
    except LeanMissing:
        print("real Lean: not installed here (see `rlv lean doctor`); fake REPL only")
    return found


def file_backends(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """The file backend without and with replay: fake toolchain, and real Lean if present."""
    fake = ["--header-s", str(args.fake_header_s)]
    sandboxes = ["none"] + (["bwrap"] if sandbox_reason("auto")[0] == "bwrap" else [])
    found: list[tuple[str, dict[str, Any]]] = []
    for sandbox in sandboxes:
        for replay in (False, True):
            config = {"backend": "file", "replay": replay, "sandbox": sandbox, "fake_file": fake}
            label = f"fake file, {sandbox}, replay {'on' if replay else 'off'}"
            found.append((label, config))
    try:
        settings = LeanConfig(backend="file")
        replay_argv(settings, file_launch(settings))
        found += [(f"lean file, replay {'on' if r else 'off'}", {"backend": "file", "replay": r})
                  for r in (False, True)]  # fmt: skip
    except LeanMissing as exc:
        print(f"real Lean file backend / replay: not available here ({str(exc)[:80]}...)")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proofs", type=int, default=200)
    parser.add_argument("--fresh-proofs", type=int, default=20)
    parser.add_argument("--pool", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fake-header-s", type=float, default=0.2)
    args = parser.parse_args()
    print(f"pool size {args.pool}, {os.cpu_count()} CPUs")
    for name, extra in backends(args):
        base = {"pool_size": args.pool, "timeout_s": 900, "proof_timeout_s": 600, **extra}
        reuse = asyncio.run(run(base, workload(args.proofs)))
        report(f"{name} reuse ({args.proofs})", reuse)
        fresh = asyncio.run(run({**base, "max_uses": 1}, workload(args.fresh_proofs)))
        report(f"{name} fresh ({args.fresh_proofs})", fresh)
        alone = {**base, "pool_size": 1}
        report(f"{name} reuse, 1 by 1", asyncio.run(run(alone, workload(20), True)))
        report(
            f"{name} fresh, 1 by 1", asyncio.run(run({**alone, "max_uses": 1}, workload(10), True))
        )
        print(f"{name}: reuse is {reuse['proofs_per_s'] / fresh['proofs_per_s']:.1f}x faster")
    latency: dict[str, float] = {}
    for name, extra in file_backends(args):
        base = {"pool_size": args.pool, "timeout_s": 900, "proof_timeout_s": 600, **extra}
        many = asyncio.run(run(base, workload(args.fresh_proofs)))
        report(f"{name} ({args.fresh_proofs})", many)
        alone = asyncio.run(run({**base, "pool_size": 1}, workload(10), True))
        report(f"{name}, 1 by 1", alone)
        latency[name] = alone["p50_ms"]
    for name, p50 in latency.items():
        if name.endswith("replay on") and (off := latency.get(name[: -len("on")] + "off")):
            print(f"{name}: replay costs {p50 - off:.0f} ms per proof ({p50 / off:.1f}x latency)")


if __name__ == "__main__":
    main()
