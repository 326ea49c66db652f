"""``write_report``: a run directory becomes report.png and a self-contained report.html."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.train.report import write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NASTY = "<script>alert('x')</script> naïve — 日本語 ✓ & \"quotes\""


def _metrics_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for step in range(3):  # cross-entropy warm start: a loss, no reward fields
        rows.append({"step": step, "phase": "warmup", "loss": 2.0 - 0.5 * step})
    for step in range(3, 20):
        reward = 0.2 + 0.03 * step
        row: dict[str, Any] = {
            "step": step,
            "phase": "rl",
            "reward_mean": reward,
            "reward_std": 0.2,
            "reward_min": 0.0,
            "reward_max": 1.0,
            "components": {"brier": reward + 0.1, "format": 1.0},
            "status": {"ok": 60, "invalid": 3, "timeout": 1, "error": step % 2},
            "degenerate_groups_skipped": 2,
            "tokens_sampled": 1000 + step,
            "completion_length_mean": 17.5,
            "importance_ratio_mean": 1.0,
            "kl_sampler_trainer": 0.0001,
            "time": {"sampling": 1.2, "scoring": 0.3, "training": 0.8, "total": 2.4},
        }
        rows.append(row)
    # Holes a real run can have.
    del rows[5]["reward_mean"]
    del rows[7]["components"]
    del rows[9]["time"]
    del rows[11]["status"]
    del rows[13]["reward_min"], rows[13]["reward_max"]
    rows[15]["time"] = {"total": 3.0}
    rows[16]["reward_std"] = None
    return rows


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")


def _make_run(root: Path) -> Path:
    run = root / "run-1"
    run.mkdir()
    config = {
        "base_model": "Qwen/Qwen3-4B",
        "backend": "tinker",
        "loss": "importance_sampling",
        "steps": 20,
        "group_size": 8,
        "groups_per_step": 8,
        "learning_rate": 4e-5,
        "reward": "calibration<b>",
        "lora_rank": 32,
        "not_shown": "secret-ish",
    }
    (run / "config.json").write_text(json.dumps(config), "utf-8")
    _write_jsonl(run / "metrics.jsonl", _metrics_rows())
    _write_jsonl(
        run / "checkpoints.jsonl",
        [{"step": s, "path": f"tinker://run/{s}", "kind": "state"} for s in (5, 10, 15)],
    )
    samples = [
        {"step": 19, "task_id": f"t{i}", "completion": f"plain {i}", "reward": 0.5, "status": "ok"}
        for i in range(12)
    ]
    samples.append(
        {"step": 19, "task_id": "t<i>", "completion": NASTY, "reward": 1.0, "status": "ok"}
    )
    _write_jsonl(run / "samples.jsonl", samples)
    return run


def _expected_means() -> tuple[float, float]:
    rewards = [r["reward_mean"] for r in _metrics_rows() if "reward_mean" in r]
    return sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One rendered report, shared: drawing takes most of a second."""
    pytest.importorskip("matplotlib")
    run = _make_run(tmp_path_factory.mktemp("report"))
    png, page = write_report(run)
    return run, png, page


def test_writes_png_and_html_into_the_run_dir(report: tuple[Path, Path, Path]) -> None:
    run, png, page = report
    assert png == run / "report.png"
    assert page == run / "report.html"
    assert png.is_file() and page.is_file()
    leftovers = sorted(p.name for p in run.iterdir() if p.name.startswith("."))
    assert leftovers == []


def test_png_is_a_valid_image_of_the_expected_size(report: tuple[Path, Path, Path]) -> None:
    import matplotlib.image

    _, png, _ = report
    assert png.read_bytes()[:8] == PNG_MAGIC
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[:2] == (900, 1200)


def test_html_is_self_contained_and_embeds_the_png(report: tuple[Path, Path, Path]) -> None:
    _, png, page = report
    text = page.read_text("utf-8")
    match = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert match is not None
    assert base64.b64decode(match.group(1)) == png.read_bytes()
    assert '<meta charset="utf-8">' in text
    for external in ("http://", "https://", "<link", 'src="http', "@import", "url("):
        assert external not in text


def test_html_escapes_sample_text_and_keeps_unicode(report: tuple[Path, Path, Path]) -> None:
    _, _, page = report
    text = page.read_text("utf-8")
    assert "<script" not in text.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "naïve — 日本語 ✓ &amp; &quot;quotes&quot;" in text
    assert "t&lt;i&gt;" in text
    assert "calibration&lt;b&gt;" in text and "calibration<b>" not in text
    # The last 10 samples only: the three oldest are left out.
    assert "plain 2" not in text and "plain 3" in text and "plain 11" in text
    assert "the last 10 of 13 logged samples" in text


def test_html_summary_figures_come_from_the_data(report: tuple[Path, Path, Path]) -> None:
    _, _, page = report
    text = page.read_text("utf-8")
    first3, last3 = _expected_means()
    assert re.search(rf"first 3 steps</th><td[^>]*>{first3:.3f}<", text)
    assert re.search(rf"last 3 steps</th><td[^>]*>{last3:.3f}<", text)
    rows = _metrics_rows()
    statuses = [r["status"] for r in rows if "status" in r]
    total = sum(sum(s.values()) for s in statuses)
    assert re.search(rf"total samples</th><td[^>]*>{total:,}<", text)
    errors = sum(s["error"] for s in statuses)
    assert re.search(rf"status: error</th><td[^>]*>{errors:,} \(", text)
    assert "20 (steps 0–19, 3 warmup)" in text
    # Config excerpt: the known keys, not the rest.
    assert "Qwen/Qwen3-4B" in text and "not_shown" not in text
    # Per-step table: a row per step, warmup rows marked.
    assert text.count('<tr class="warmup">') == 3
    assert re.search(r"<tr><td>19</td><td>rl</td><td>0\.770</td>", text)


def test_sparse_and_duplicate_steps_still_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = tmp_path / "sparse"
    run.mkdir()
    (run / "metrics.jsonl").write_text(
        '{"step": 0}\n\n{"reward_mean": "n/a", "time": 3}\n'
        '{"step": 1, "reward_mean": 0.1}\n{"step": 1, "reward_mean": 0.9}\n',
        "utf-8",
    )
    _png, page = write_report(run)
    text = page.read_text("utf-8")
    assert "no samples.jsonl" in text
    assert re.search(r"first 3 steps</th><td[^>]*>0\.900<", text)  # the later step 1 wins


def test_a_line_torn_by_a_killed_run_is_left_out_as_resume_does(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = _make_run(tmp_path)
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"step": 20, "phase": "rl", "reward_me')  # no newline: torn
    _png, page = write_report(run)
    assert "20 (steps 0–19, 3 warmup)" in page.read_text("utf-8")


def test_import_has_no_plotting_side_effects(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = _make_run(tmp_path)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import rl_verifier.train.report as r\n"
        "assert 'matplotlib' not in sys.modules, 'imported matplotlib on import'\n"
        f"r.write_report(Path({str(run)!r}))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'used pyplot'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------- errors


def _assert_untouched(run: Path, before: set[str]) -> None:
    assert {p.name for p in run.iterdir()} == before


def test_missing_run_dir(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no such directory"):
        write_report(tmp_path / "nope")


def test_run_dir_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match=r"not a directory"):
        write_report(tmp_path / "file")


def test_missing_metrics(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"metrics\.jsonl: no such file"):
        write_report(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["", "\n  \n\n"])
def test_empty_metrics(tmp_path: Path, content: str) -> None:
    (tmp_path / "metrics.jsonl").write_text(content)
    with pytest.raises(UserError, match=r"metrics\.jsonl: empty"):
        write_report(tmp_path)
    _assert_untouched(tmp_path, {"metrics.jsonl"})


@pytest.mark.parametrize(
    ("bad", "problem"),
    [('{"step": 2, "reward_mean": ', "malformed JSON"), ("[1, 2]", "expected a JSON object")],
)
def test_malformed_metrics_line_is_named(tmp_path: Path, bad: str, problem: str) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n{"step": 1}\n\n' + bad + "\n", "utf-8")
    with pytest.raises(UserError, match=re.escape(f"{path}:4: {problem}")) as caught:
        write_report(tmp_path)
    assert "\n" not in str(caught.value)
    _assert_untouched(tmp_path, {"metrics.jsonl"})


def test_malformed_samples_line_is_named_and_old_report_kept(tmp_path: Path) -> None:
    run = _make_run(tmp_path)
    (run / "report.html").write_text("old report")
    with (run / "samples.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{oops\n")
    before = {p.name for p in run.iterdir()}
    with pytest.raises(UserError, match=re.escape(f"{run / 'samples.jsonl'}:14: malformed JSON")):
        write_report(run)
    _assert_untouched(run, before)
    assert (run / "report.html").read_text() == "old report"


def test_malformed_config_is_named(tmp_path: Path) -> None:
    run = _make_run(tmp_path)
    (run / "config.json").write_text('{"steps": 20,\n  oops}')
    with pytest.raises(UserError, match=re.escape(f"{run / 'config.json'}:2: malformed JSON")):
        write_report(run)
    assert not (run / "report.png").exists()


def test_the_configs_trivial_baseline_is_a_line_on_the_reward_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from rl_verifier.train import report as report_module

    run = _make_run(tmp_path)
    config = json.loads((run / "config.json").read_text("utf-8"))
    config.update(baseline_reward=0.75, baseline_label="always 0.5")
    (run / "config.json").write_text(json.dumps(config), "utf-8")
    loaded = report_module.load_run(run)
    ax = Figure().subplots()
    report_module._plot_reward(ax, loaded)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["always 0.5 (0.750)"].get_ydata()) == [0.75, 0.75]
    _png, page = write_report(run)
    assert re.search(r"baseline: always 0\.5</th><td[^>]*>0\.750<", page.read_text("utf-8"))


def test_without_a_baseline_no_line_is_drawn(report: tuple[Path, Path, Path]) -> None:
    _, _, page = report
    assert "baseline:" not in page.read_text("utf-8")
