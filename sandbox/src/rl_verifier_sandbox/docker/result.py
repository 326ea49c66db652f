"""A docker job's ``Result`` from its demultiplexed output and the supervisor's report."""

from __future__ import annotations

from rl_verifier_sandbox.api import Limits, Result
from rl_verifier_sandbox.docker.launch import Report
from rl_verifier_sandbox.docker.stream import Demux
from rl_verifier_sandbox.jobs.result import classify


def split_status(status: int) -> tuple[int | None, int | None]:
    """Shell style: 128+N is signal N."""
    return (None, status - 128) if 128 < status < 128 + 65 else (status, None)


def from_report(
    demux: Demux, report: Report, report_len: int, limits: Limits, wall: float
) -> Result:
    stdout, out_cut = demux.stdout.without_suffix(0)
    stderr, err_cut = demux.stderr.without_suffix(report_len)
    code, sig = split_status(report.status)
    cpu = report.cpu_s or 0.0
    limit: str | None = None
    if demux.over:
        limit = "output"
    elif report.timed_out:
        limit = None
    elif report.cpu_capped:
        limit = "cpu"  # the watcher saw the job's CPU total pass cpu_s and killed it
    elif report.oom_kills and code != 0:
        limit = "memory"
    else:
        limit = classify(code, sig, stderr, limits, cpu_s=cpu, output_killed=False)
        if limit is None and report.pids_refused and code != 0:
            limit = "processes"
    return Result(
        exit_code=code,
        signal=sig,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        timed_out=report.timed_out and not demux.over,
        limit_hit=limit,
        wall_s=wall,
        cpu_s=cpu,
    )


def lost(demux: Demux, limits: Limits, wall: float) -> Result:
    """No report came back: the container was destroyed with the job in it."""
    stdout, out_cut = demux.stdout.without_suffix(0)
    stderr, err_cut = demux.stderr.without_suffix(0)
    timed_out = wall >= limits.wall_s and not demux.over
    return Result(
        exit_code=None,
        signal=9,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        timed_out=timed_out,
        limit_hit="output" if demux.over else None,
        wall_s=wall,
        cpu_s=0.0,
    )
