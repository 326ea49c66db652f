"""``rlv report RUN_DIR``: a training run as a PNG of four plots and a self-contained HTML page.

Reads ``metrics.jsonl`` (required), ``config.json``, ``checkpoints.jsonl`` and ``samples.jsonl``
(all optional) from a run directory and writes ``report.png`` and ``report.html`` next to them.
Every field of a metrics row may be missing; values that are not finite numbers count as missing.
If a step was logged twice (a resumed run), the later row wins.

matplotlib is imported only when a report is drawn, and through its Agg canvas directly, so
importing this module changes no global plotting state.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier.base.errors import UserError
from rl_verifier.files.atomic import write_files
from rl_verifier.parsing.config_input import read_config_file
from rl_verifier.train.gains import baseline_verdict, paired_gains, trivial_baseline
from rl_verifier.train.rundir import CHECKPOINTS, EVAL_SAMPLES, METRICS, REPORT, SAMPLES, RunDir

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["write_report"]

PNG_NAME = "report.png"
HTML_NAME = REPORT
WIDTH_PX, HEIGHT_PX, DPI = 1200, 900, 100
STATUS_KEYS = ("ok", "invalid", "timeout", "error")
STATUS_COLOURS = {"ok": "#2ca02c", "invalid": "#ff7f0e", "timeout": "#9467bd", "error": "#d62728"}
TIME_KEYS = ("sampling", "scoring", "training")
TIME_COLOURS = {"sampling": "#1f77b4", "scoring": "#ff7f0e", "training": "#2ca02c"}
CONFIG_KEYS = (
    "base_model",
    "backend",
    "loss",
    "steps",
    "group_size",
    "groups_per_step",
    "learning_rate",
    "reward",
    "lora_rank",
)
LAST_SAMPLES = 10
MAX_TABLE_ROWS = 200
MAX_COMPLETION_CHARS = 2000


@dataclass
class Run:
    """What a run directory holds, parsed."""

    path: Path
    steps: list[int]
    rows: list[dict[str, Any]]
    config: dict[str, Any]
    checkpoints: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    samples_seen: int
    evals: list[dict[str, Any]] = field(default_factory=list)  # held-out rows, by step
    eval_samples: list[dict[str, Any]] = field(default_factory=list)  # their samples


def write_report(run_dir: Path | Run) -> tuple[Path, Path]:
    """Write ``RUN_DIR/report.png`` and ``RUN_DIR/report.html``; return their paths. A
    :class:`Run` already read (``load_run``) is drawn without reading the logs again.

    Inputs are read and checked before anything is written; each file is written to a
    temporary name and moved into place, so a failure leaves no partial report behind.
    """
    run = run_dir if isinstance(run_dir, Run) else load_run(Path(run_dir))
    png = render_png(run)
    page = render_html(run, png)
    png_path, html_path = run.path / PNG_NAME, run.path / HTML_NAME
    _write_atomic({png_path: png, html_path: page.encode("utf-8")})
    return png_path, html_path


# ---------------------------------------------------------------------------- reading


def load_run(run_dir: Path) -> Run:
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such directory")
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a directory")
    metrics_path = run_dir / METRICS
    if not metrics_path.is_file():
        raise UserError(f"{metrics_path}: no such file (is {run_dir} a training run directory?)")
    run = RunDir(run_dir)
    by_step: dict[int, dict[str, Any]] = {}
    evals: dict[int, dict[str, Any]] = {}
    previous = -1
    for row in run.rows(METRICS):
        if _phase(row) == "eval":  # held-out evals share step numbers with the steps
            if isinstance(_sub(row, "eval").get("mean_reward"), dict):
                evals[_as_step(row.get("step")) or 0] = row
            continue
        step = _as_step(row.get("step"))
        step = previous + 1 if step is None else step
        by_step[step] = row
        previous = step
    if not by_step:
        raise UserError(f"{metrics_path}: empty: no steps logged yet")
    steps = sorted(by_step)
    all_samples = run.rows(SAMPLES)

    return Run(
        path=run_dir,
        steps=steps,
        rows=[by_step[s] for s in steps],
        config=read_config_file(run.config_file) if run.config_file.is_file() else {},
        checkpoints=run.rows(CHECKPOINTS),
        samples=all_samples[-LAST_SAMPLES:],
        samples_seen=len(all_samples),
        evals=[evals[s] for s in sorted(evals)],
        eval_samples=run.rows(EVAL_SAMPLES),
    )


def _num(value: Any) -> float | None:
    """A finite number, or None for anything else (missing, bool, string, NaN, inf)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _as_step(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None and number.is_integer() else None


def _sub(row: dict[str, Any], key: str) -> dict[str, Any]:
    value = row.get(key)
    return value if isinstance(value, dict) else {}


def _series(run: Run, key: str, group: str | None = None) -> list[float | None]:
    return [_num((_sub(row, group) if group else row).get(key)) for row in run.rows]


def _keys(run: Run, group: str, first: Sequence[str] = ()) -> list[str]:
    """Keys of a nested dict over all rows with a numeric value: ``first`` ones, then others."""
    found: dict[str, None] = {}
    for row in run.rows:
        for key, value in _sub(row, group).items():
            if _num(value) is not None:
                found[str(key)] = None
    return [k for k in first if k in found] + [k for k in found if k not in first]


def _present(steps: Sequence[int], values: Sequence[float | None]) -> tuple[list[int], list[float]]:
    pairs = [(s, v) for s, v in zip(steps, values, strict=True) if v is not None]
    return [s for s, _ in pairs], [v for _, v in pairs]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _phase(row: dict[str, Any]) -> str:
    phase = row.get("phase")
    return phase if isinstance(phase, str) else ""


# ---------------------------------------------------------------------------- summary


@dataclass
class Summary:
    steps: int
    first_step: int
    last_step: int
    warmup_steps: int
    reward_first3: float | None
    reward_last3: float | None
    reward_best: tuple[int, float] | None
    status_totals: dict[str, float]
    total_samples: float
    time_totals: dict[str, float]
    tokens_sampled: float | None
    degenerate_skipped: float | None
    held_out: list[tuple[str, str]] = field(default_factory=list)  # first and last evals


def summarise_run(run: Run) -> Summary:
    reward_steps, rewards = _present(run.steps, _series(run, "reward_mean"))
    best = None
    if rewards:
        top = max(range(len(rewards)), key=rewards.__getitem__)
        best = (reward_steps[top], rewards[top])
    status_totals = {
        key: sum(v for v in _series(run, key, "status") if v is not None)
        for key in _keys(run, "status", STATUS_KEYS)
    }
    time_totals = {
        key: sum(v for v in _series(run, key, "time") if v is not None)
        for key in _keys(run, "time", (*TIME_KEYS, "total"))
    }

    def total(key: str) -> float | None:
        values = [v for v in _series(run, key) if v is not None]
        return sum(values) if values else None

    return Summary(
        steps=len(run.steps),
        first_step=run.steps[0],
        last_step=run.steps[-1],
        warmup_steps=sum(1 for row in run.rows if _phase(row) == "warmup"),
        reward_first3=_mean(rewards[:3]),
        reward_last3=_mean(rewards[-3:]),
        reward_best=best,
        status_totals=status_totals,
        total_samples=sum(status_totals.values()),
        time_totals=time_totals,
        tokens_sampled=total("tokens_sampled"),
        degenerate_skipped=total("degenerate_groups_skipped"),
        held_out=held_out_headline(run),
    )


def held_out_headline(run: Run) -> list[tuple[str, str]]:
    """The first held-out eval, the one after the warm start (if any) and the last, as
    summary rows."""
    picked: list[dict[str, Any]] = []
    warm = [row for row in run.evals if row.get("stage") == "warm_start"]
    for row in run.evals[:1] + warm[:1] + run.evals[-1:]:
        if not any(row is seen for seen in picked):
            picked.append(row)
    rows = []
    for row in picked:
        figures = _sub(row, "eval")
        parts = [f"mean reward {_interval(figures.get('mean_reward'))}"]
        for k, value in _sub(figures, "pass_at_k").items():
            parts.append(f"pass@{_e(k)} {_interval(value)}")
        rows.append((f"held-out eval, {_eval_when(row)}", "; ".join(parts)))
    return rows


def _eval_when(row: dict[str, Any]) -> str:
    stage = row.get("stage")
    if stage == "base":
        return "base model"
    if stage == "warm_start":
        return "after the warm start"
    return f"after {_as_step(row.get('trained_steps'))} steps"


def _interval(figure: Any) -> str:
    if not isinstance(figure, dict) or _num(figure.get("mean")) is None:
        return "–"
    low, high = _num(figure.get("low")), _num(figure.get("high"))
    span = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{figure['mean']:.3f}{span}"


# ---------------------------------------------------------------------------- the PNG


def render_png(run: Run) -> bytes:
    """The four panels as PNG bytes, WIDTH_PX x HEIGHT_PX."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise UserError("rlv report needs matplotlib: pip install matplotlib") from None

    # A bare Figure on an explicit Agg canvas: no pyplot, no global backend switch.
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(f"Training run: {run.path.name}", fontsize=13)
    (ax_reward, ax_components), (ax_status, ax_time) = fig.subplots(2, 2)
    _plot_reward(ax_reward, run)
    _plot_components(ax_components, run)
    _plot_stacked(
        ax_status, run, "status", STATUS_KEYS, STATUS_COLOURS, "Samples by status", "samples"
    )
    _plot_time(ax_time, run)
    marks = [run.steps[0], run.steps[-1], *_checkpoint_steps(run)]
    marks += [point[0] for point in held_out_points(run)]
    for ax in (ax_reward, ax_components, ax_status, ax_time):  # one step axis for all four
        ax.set_xlim(min(marks) - 0.7, max(marks) + 0.7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _marker(run: Run, marker: str) -> str:
    """Point markers help on short runs and turn long ones into noise."""
    return marker if len(run.steps) <= 60 else ""


def _bar_width(run: Run) -> float:
    """Gaps between bars help on short runs and alias into stripes on long ones."""
    return 0.85 if len(run.steps) <= 60 else 1.0


def _no_data(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="gray")


def _shade_warmup(ax: Axes, run: Run) -> None:
    spans: list[list[int]] = []
    for step, row in zip(run.steps, run.rows, strict=True):
        if _phase(row) != "warmup":
            continue
        if spans and spans[-1][1] == step - 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    for i, (start, end) in enumerate(spans):
        label = "warmup" if i == 0 else None
        ax.axvspan(start - 0.5, end + 0.5, color="gray", alpha=0.12, label=label, lw=0)


def _rolling(values: Sequence[float], window: int) -> list[float]:
    out, acc = [], 0.0
    for i, value in enumerate(values):
        acc += value
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def _plot_reward(ax: Axes, run: Run) -> None:
    _axes(ax, "Reward per step", "reward")
    _shade_warmup(ax, run)
    lows, highs = _series(run, "reward_min"), _series(run, "reward_max")
    band = [
        (s, lo, hi)
        for s, lo, hi in zip(run.steps, lows, highs, strict=True)
        if lo is not None and hi is not None
    ]
    if band:
        ax.fill_between(
            [b[0] for b in band],
            [b[1] for b in band],
            [b[2] for b in band],
            color="#1f77b4",
            alpha=0.15,
            lw=0,
            label="min–max",
        )
    steps, means = _present(run.steps, _series(run, "reward_mean"))
    if means:
        ax.plot(steps, means, color="#1f77b4", lw=1, marker=_marker(run, "."), ms=4, label="mean")
        window = min(20, max(3, len(means) // 10))
        if len(means) > window:
            ax.plot(
                steps,
                _rolling(means, window),
                color="#d62728",
                lw=2,
                label=f"rolling mean ({window} steps)",
            )
    _plot_held_out(ax, run)
    _plot_baseline(ax, run)
    for i, step in enumerate(_checkpoint_steps(run)):
        ax.axvline(
            step,
            color="black",
            ls="--",
            lw=0.8,
            alpha=0.6,
            label="checkpoint" if i == 0 else None,
        )
    loss_steps, losses = _present(run.steps, _series(run, "loss"))
    handles, labels = ax.get_legend_handles_labels()
    legend_ax = ax
    if losses:
        twin = legend_ax = ax.twinx()
        (line,) = twin.plot(
            loss_steps, losses, color="gray", ls=":", lw=1.5, marker=_marker(run, "x"), ms=3
        )
        twin.set_ylabel("loss", color="gray")
        handles.append(line)
        labels.append("loss (right axis)")
    if not means and not losses:
        _no_data(ax, "no reward logged")
    if handles:  # below the plot: the min-max band leaves no free corner inside it
        legend_ax.legend(
            handles,
            labels,
            fontsize="small",
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncol=3,
            frameon=False,
        )


def held_out_points(run: Run) -> list[tuple[int, float, float | None, float | None]]:
    """(step, mean, low, high) of each held-out eval's mean reward."""
    points = []
    for row in run.evals:
        figure = _sub(row, "eval")["mean_reward"]
        mean = _num(figure.get("mean"))
        if mean is not None:
            step = _as_step(row.get("step"))
            points.append((-1 if step is None else step, mean, _num(figure.get("low")),
                           _num(figure.get("high"))))  # fmt: skip
    return points


def _plot_held_out(ax: Axes, run: Run) -> None:
    """The held-out mean reward beside the training reward, with its 95% interval."""
    points = held_out_points(run)
    if not points:
        return
    steps = [p[0] for p in points]
    means = [p[1] for p in points]
    below = [p[1] - p[2] if p[2] is not None else 0.0 for p in points]
    above = [p[3] - p[1] if p[3] is not None else 0.0 for p in points]
    ax.errorbar(steps, means, yerr=[below, above], color="#2ca02c", lw=1.5, marker="s", ms=4,
                capsize=3, label="held-out mean (95% CI)")  # fmt: skip


def baseline(run: Run) -> tuple[float, str] | None:
    """The config's trivial-policy reward and its label, if it names one."""
    return trivial_baseline(run.config)


def _plot_baseline(ax: Axes, run: Run) -> None:
    """A trivial policy's reward (always 0.5, an empty reply) as a horizontal line."""
    found = baseline(run)
    if found is not None:
        value, label = found
        ax.axhline(value, color="#9467bd", ls="-.", lw=1.2, label=f"{label} ({value:.3f})")


def _checkpoint_steps(run: Run) -> list[float]:
    steps = (_num(checkpoint.get("step")) for checkpoint in run.checkpoints)
    return [step for step in steps if step is not None]


def _plot_components(ax: Axes, run: Run) -> None:
    _axes(ax, "Reward components (mean per step)", "component mean")
    keys = _keys(run, "components")
    for key in keys:
        steps, values = _present(run.steps, _series(run, key, "components"))
        ax.plot(steps, values, lw=1.2, marker=_marker(run, "."), ms=3, label=key)
    if keys:
        ax.legend(fontsize="small", loc="best", ncol=2 if len(keys) > 4 else 1)
    else:
        _no_data(ax, "no reward components logged")


def _axes(ax: Axes, title: str, ylabel: str) -> None:
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)


def _stack(
    ax: Axes,
    run: Run,
    layers: list[tuple[str, list[float]]],
    colours: dict[str, str],
    bottom: list[float] | None = None,
) -> list[float]:
    """Draw ``(label, heights)`` layers as stacked bars on ``bottom``; return the tops."""
    bottom = bottom or [0.0] * len(run.steps)
    for label, heights in layers:
        ax.bar(
            run.steps,
            heights,
            bottom=bottom,
            width=_bar_width(run),
            label=label,
            color=colours.get(label),
        )
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    return bottom


def _heights(run: Run, key: str, group: str) -> list[float]:
    return [v or 0.0 for v in _series(run, key, group)]


def _plot_stacked(
    ax: Axes,
    run: Run,
    group: str,
    first: Sequence[str],
    colours: dict[str, str],
    title: str,
    ylabel: str,
) -> None:
    _axes(ax, title, ylabel)
    keys = _keys(run, group, first)
    _stack(ax, run, [(key, _heights(run, key, group)) for key in keys], colours)
    if keys:
        ax.legend(fontsize="small", loc="best")
    else:
        _no_data(ax, f"no {group} logged")


def _plot_time(ax: Axes, run: Run) -> None:
    keys = _keys(run, "time", TIME_KEYS)
    parts = [k for k in keys if k in TIME_KEYS]  # waiting overlaps these; not stacked
    colours = {**TIME_COLOURS, "other": "#bbbbbb"}
    _axes(ax, "Time per step", "seconds")
    bottom = _stack(ax, run, [(key, _heights(run, key, "time")) for key in parts], colours)
    totals = _series(run, "total", "time")
    other = [max(0.0, t - b) if t is not None else 0.0 for t, b in zip(totals, bottom, strict=True)]
    if any(o > 1e-9 * max(1.0, t or 0.0) for o, t in zip(other, totals, strict=True)):
        _stack(ax, run, [("other", other)], colours, bottom)  # what no timer covers
    if keys:
        ax.legend(fontsize="small", loc="best")
    else:
        _no_data(ax, "no timings logged")


# ---------------------------------------------------------------------------- the HTML

CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto;
       max-width: 1260px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.sub { color: #666; margin-top: 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; }
td.l, th.l { text-align: left; }
table.steps { font-size: 12px; font-variant-numeric: tabular-nums; }
tr.warmup td { background: #f7f7f7; color: #666; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; max-width: 820px;
      font-size: 12px; max-height: 16em; overflow: auto; }
.note { color: #666; font-size: 12px; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{round(value):,}" if digits == 0 else f"{value:.{digits}f}"


def _fmt_reward(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], left: Sequence[bool]) -> str:
    """A table of already-escaped cells; ``left`` says which columns align left."""
    cls = [' class="l"' if is_left else "" for is_left in left]
    head = "".join(f"<th{c}>{_e(h)}</th>" for h, c in zip(header, cls, strict=True))
    body = "".join(
        "<tr>" + "".join(f"<td{c}>{v}</td>" for v, c in zip(row, cls, strict=True)) + "</tr>\n"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def render_html(run: Run, png: bytes) -> str:
    summary = summarise_run(run)
    image = base64.b64encode(png).decode("ascii")
    title = f"Training report: {run.path.name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(run.path.resolve())}</p>',
        "<h2>Summary</h2>",
        _summary_table(summary, run),
        "<h2>Config</h2>",
        _config_table(run.config),
        "<h2>Plots</h2>",
        f'<img alt="reward, components, status and time per step" '
        f'width="{WIDTH_PX}" height="{HEIGHT_PX}" src="data:image/png;base64,{image}">',
        "<h2>Per-step metrics</h2>",
        _steps_table(run),
        "<h2>Last samples</h2>",
        _samples_table(run),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _baseline_row(run: Run) -> list[tuple[str, str]]:
    found = baseline(run)
    return [] if found is None else [(f"baseline: {_e(found[1])}", f"{found[0]:.3f}")]


def _gain_rows(run: Run) -> list[tuple[str, str]]:
    """The held-out paired differences and whether the last eval clears the baseline."""
    rows = [(_e(g.label), _e(g.value())) for g in paired_gains(run.eval_samples, run.evals)]
    found = baseline_verdict(run.evals, run.config)
    return rows + ([] if found is None else [(_e(found[0]), _e(found[1]))])


def _summary_table(summary: Summary, run: Run) -> str:
    steps = f"{summary.steps} (steps {summary.first_step}–{summary.last_step}"
    steps += f", {summary.warmup_steps} warmup)" if summary.warmup_steps else ")"
    rows: list[tuple[str, str]] = [
        ("steps", steps),
        *summary.held_out,
        *_baseline_row(run),
        *_gain_rows(run),
        ("mean reward, first 3 steps", _fmt_reward(summary.reward_first3)),
        ("mean reward, last 3 steps", _fmt_reward(summary.reward_last3)),
    ]
    if summary.reward_best is not None:
        best_step, best_value = summary.reward_best
        rows.append(("best mean reward", f"{_fmt_reward(best_value)} (step {best_step})"))
    rows.append(("total samples", _fmt(summary.total_samples, 0)))
    for key, count in summary.status_totals.items():
        share = f" ({100 * count / summary.total_samples:.1f}%)" if summary.total_samples else ""
        rows.append((f"status: {_e(key)}", f"{_fmt(count, 0)}{share}"))
    if summary.degenerate_skipped is not None:
        rows.append(("degenerate groups skipped", _fmt(summary.degenerate_skipped, 0)))
    if summary.tokens_sampled is not None:
        rows.append(("tokens sampled", _fmt(summary.tokens_sampled, 0)))
    overall = summary.time_totals.get("total") or sum(
        v for k, v in summary.time_totals.items() if k != "total"
    )
    for key, seconds in summary.time_totals.items():
        share = f" ({100 * seconds / overall:.1f}%)" if overall and key != "total" else ""
        rows.append((f"time: {_e(key)}", f"{seconds:.1f} s{share}"))
    body = "".join(f'<tr><th class="l">{k}</th><td class="l">{v}</td></tr>\n' for k, v in rows)
    return f'<table class="summary"><tbody>\n{body}</tbody></table>'


def _config_table(config: dict[str, Any]) -> str:
    shown = [key for key in CONFIG_KEYS if key in config]
    if not shown:
        return '<p class="note">no config.json, or none of its usual keys</p>'
    rows = []
    for key in shown:
        value = config[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        rows.append(f'<tr><th class="l">{_e(key)}</th><td class="l">{_e(text)}</td></tr>')
    return '<table class="config"><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"


# (header, (key, nested group), digits) per optional per-step column, shown if any row has it.
_STEP_COLUMNS: list[tuple[str, tuple[str, str | None], int]] = [
    ("reward", ("reward_mean", None), 3),
    ("std", ("reward_std", None), 3),
    ("min", ("reward_min", None), 3),
    ("max", ("reward_max", None), 3),
    ("loss", ("loss", None), 4),
    ("ok", ("ok", "status"), 0),
    ("invalid", ("invalid", "status"), 0),
    ("timeout", ("timeout", "status"), 0),
    ("error", ("error", "status"), 0),
    ("degen.", ("degenerate_groups_skipped", None), 0),
    ("tokens", ("tokens_sampled", None), 0),
    ("len", ("completion_length_mean", None), 1),
    ("ratio", ("importance_ratio_mean", None), 3),
    ("kl", ("kl_sampler_trainer", None), 5),
    ("time s", ("total", "time"), 2),
]


def _pick_rows(count: int, limit: int) -> list[int]:
    if count <= limit:
        return list(range(count))
    picked = {round(i * (count - 1) / (limit - 1)) for i in range(limit)}
    return sorted(picked)


def _steps_table(run: Run) -> str:
    columns = []
    for name, (key, group), digits in _STEP_COLUMNS:
        values = _series(run, key, group)
        if any(v is not None for v in values):
            columns.append((name, values, digits))
    has_phase = any(_phase(row) for row in run.rows)
    header = ["step", *(["phase"] if has_phase else []), *(c[0] for c in columns)]
    picked = _pick_rows(len(run.steps), MAX_TABLE_ROWS)
    body = []
    for index in picked:
        phase = _phase(run.rows[index])
        cells = [str(run.steps[index])]
        if has_phase:
            cells.append(_e(phase))
        cells += [_fmt(values[index], digits) for _h, values, digits in columns]
        cls = ' class="warmup"' if phase == "warmup" else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    note = ""
    if len(picked) < len(run.steps):
        note = f'<p class="note">showing {len(picked)} of {len(run.steps)} steps, evenly spaced</p>'
    return (
        f'{note}<table class="steps"><thead><tr>{head}</tr></thead><tbody>\n'
        + "\n".join(body)
        + "\n</tbody></table>"
    )


def _samples_table(run: Run) -> str:
    if not run.samples:
        return '<p class="note">no samples.jsonl, or it is empty</p>'
    rows = []
    for sample in reversed(run.samples):
        completion = sample.get("completion")
        text = completion if isinstance(completion, str) else json.dumps(completion)
        if len(text) > MAX_COMPLETION_CHARS:
            text = text[:MAX_COMPLETION_CHARS] + f"… [{len(text) - MAX_COMPLETION_CHARS} more]"
        step = _as_step(sample.get("step"))
        rows.append(
            [
                "–" if step is None else str(step),
                _e(sample.get("task_id", "–")),
                _fmt_reward(_num(sample.get("reward"))),
                _e(sample.get("status", "–")),
                f"<pre>{_e(text)}</pre>",
            ]
        )
    note = (
        f'<p class="note">the last {len(run.samples)} of {run.samples_seen} logged samples, '
        "newest first</p>"
    )
    header = ["step", "task", "reward", "status", "completion"]
    return note + _table(header, rows, [False, True, False, True, True])


# ---------------------------------------------------------------------------- writing


def _write_atomic(files: dict[Path, bytes]) -> None:
    """Write the report's files, all or none."""
    try:
        write_files(files)
    except OSError as exc:
        raise UserError(f"{next(iter(files)).parent}: cannot write report: {exc}") from None
