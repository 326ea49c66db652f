"""An eval's ``report.png`` (pass@k by k, per-task pass@k, reward distribution) and
``report.html`` (the summary table, the plots, the per-task table), as ``rlv report``
draws a training run: a bare Agg figure, both files written at once."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

from rl_verifier.base.errors import UserError
from rl_verifier.evaluation.summary import JUDGED
from rl_verifier.train.report import CSS, DPI, HTML_NAME, PNG_NAME, _e, _table, _write_atomic

WIDTH_PX, HEIGHT_PX = 1500, 450
MAX_TASK_BARS = 60


def write_eval_report(folder: Path, summary: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    png = render_png(folder.name, summary, rows)
    _write_atomic(
        {
            folder / PNG_NAME: png,
            folder / HTML_NAME: render_html(folder, summary, png).encode("utf-8"),
        }
    )


def render_png(name: str, summary: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError("the eval report needs matplotlib: pip install matplotlib") from None
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(f"Eval: {name}", fontsize=13)
    by_k, per_task, rewards = fig.subplots(1, 3)
    overall = summary["overall"]["pass_at_k"]
    ks = [int(k) for k in overall]
    by_k.set_title("pass@k over tasks (95% interval)")
    by_k.set_xlabel("k")
    by_k.set_ylabel("pass@k")
    means = [overall[str(k)]["mean"] for k in ks]
    errors = [
        [
            m - (overall[str(k)]["low"] if overall[str(k)]["low"] is not None else m)
            for k, m in zip(ks, means, strict=True)
        ],
        [
            (overall[str(k)]["high"] if overall[str(k)]["high"] is not None else m) - m
            for k, m in zip(ks, means, strict=True)
        ],
    ]
    by_k.errorbar(ks, means, yerr=errors, marker="o", capsize=4)
    by_k.set_ylim(-0.05, 1.05)
    tasks = summary["per_task"][:MAX_TASK_BARS]
    per_task.set_title(
        "pass@k per task"
        + (f" (first {MAX_TASK_BARS})" if len(summary["per_task"]) > MAX_TASK_BARS else "")
    )
    width = 0.8 / max(1, len(ks))
    for j, k in enumerate(ks):
        values = [t["pass_at_k"].get(str(k), 0.0) for t in tasks]
        per_task.bar(
            [i + j * width for i in range(len(tasks))], values, width=width, label=f"pass@{k}"
        )
    middle = width * (len(ks) - 1) / 2
    ticks = [i + middle for i in range(len(tasks))]
    per_task.set_xticks(ticks, [t["task_id"] for t in tasks], rotation=90, fontsize=6)
    per_task.set_ylim(0, 1.05)
    if ks:
        per_task.legend(fontsize="small")
    judged = [float(r["score"]["reward"]) for r in rows if r["score"]["status"] in JUDGED]
    rewards.set_title("reward distribution (judged samples)")
    rewards.set_xlabel("reward")
    rewards.set_ylabel("samples")
    if judged:
        rewards.hist(judged, bins=20)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def interval_text(figure: dict[str, Any] | None) -> str:
    if not figure:
        return "–"
    if figure["low"] is None:
        return f"{figure['mean']:.3f} (1 value)"
    return f"{figure['mean']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"


def shown_path(source: str) -> str:
    """A path below the current directory as a relative one."""
    if not os.path.isabs(source):
        return source
    relative = os.path.relpath(source)
    return source if relative.startswith("..") else relative


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline figures, as (label, text)."""
    overall, settings = summary["overall"], summary["settings"]
    rows = [
        ("model", str(settings.get("model"))),
        ("tasks", f"{overall['tasks']} from {shown_path(str(settings.get('tasks')))}"),
        ("reward", str(settings.get("reward") or "each task's verifier")),
        ("samples", f"{overall['samples']} (n = {settings['n']} per task)"),
        ("mean reward", interval_text(overall["mean_reward"])),
    ]
    rows += [(f"pass@{k}", interval_text(v)) for k, v in overall["pass_at_k"].items()]
    rows += [(f"cons@{k}", interval_text(v)) for k, v in overall["cons_at_k"].items()]
    rows.append(("status", "  ".join(f"{k} {v}" for k, v in overall["status"].items())))
    rows.append(("tokens", f"{overall['tokens']:,}"))
    rows.append(("wall time", f"{summary['wall_s']:.1f} s"))
    return rows


def render_html(folder: Path, summary: dict[str, Any], png: bytes) -> str:
    image = base64.b64encode(png).decode("ascii")
    title = f"Eval report: {folder.name}"
    head = "".join(
        f'<tr><th class="l">{_e(k)}</th><td class="l">{_e(v)}</td></tr>\n'
        for k, v in summary_rows(summary)
    )
    ks = list(summary["overall"]["pass_at_k"]) or [str(k) for k in summary["settings"]["k"]]
    header = ["task", "samples", "judged", "correct", "mean reward", *(f"pass@{k}" for k in ks),
              "timeout", "error"]  # fmt: skip
    rows = [
        [
            _e(t["task_id"]),
            str(t["samples"]),
            str(t["judged"]),
            str(t["correct"]),
            _e(interval_text(t["mean_reward"])),
            *(f"{t['pass_at_k'][k]:.3f}" if k in t["pass_at_k"] else "–" for k in ks),
            str(t["status"]["timeout"]),
            str(t["status"]["error"]),
        ]
        for t in summary["per_task"]
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(folder.resolve())}</p>',
        "<h2>Summary</h2>",
        f'<table class="summary"><tbody>\n{head}</tbody></table>',
        "<h2>Plots</h2>",
        f'<img alt="pass@k and rewards" width="{WIDTH_PX}" height="{HEIGHT_PX}" '
        f'src="data:image/png;base64,{image}">',
        "<h2>Per task</h2>",
        _table(header, rows, [True] + [False] * (len(header) - 1)),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
