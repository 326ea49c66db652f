"""What a judge endpoint that answers without end costs the scorer: peak RSS, wall time,
the row's status and reason, and how many bytes the server wrote before the client hung
up. The endpoint is the judge tests' loopback server (plugins/judge/tests/fake_judge.py),
each hostile fault offering 1 GiB: a body declaring 1 GiB, a chunked body without end,
stream events without ``[DONE]``, one stream line without end, headers without end, and
a gzip body of about 64 KiB that inflates to 64 MiB. Each case runs in a fresh process
(peak RSS is per process), with the judge's default caps, ``retries = 0`` and
``deadline_s = 60``.

Run: .venv/bin/python benchmarks/judge_hostile_endpoint.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "plugins" / "judge" / "tests"
CASES = [("huge", False), ("endless", False), ("endless-sse", True), ("longline", True),
         ("headers", False), ("gzip", False)]  # fmt: skip


def one(kind: str, stream: bool) -> dict[str, object]:
    """Score one completion against the fault ``kind`` (run in its own process)."""
    sys.path.insert(0, str(TESTS))
    from fake_judge import FakeJudge  # type: ignore[import-not-found]
    from judge_helpers import judge_one  # type: ignore[import-not-found]

    model = f"fault:{kind}"
    with FakeJudge() as server:
        began = time.perf_counter()
        settings = server.settings(model, stream=stream, retries=0, deadline_s=60, cache="off")
        score = judge_one(settings, "Paris")
        wall = time.perf_counter() - began
        sent = server.sent(model)
    return {"status": score.status.value, "error": score.error or "", "wall_s": wall,
            "sent_mib": sent / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(one(sys.argv[1], sys.argv[2] == "stream")))
        return
    print(f"{'fault':<12} {'status':<7} {'peak RSS':>9} {'wall':>7} {'sent':>9}  reason")
    for kind, stream in CASES:
        mode = "stream" if stream else "body"
        answer = subprocess.run([sys.executable, __file__, kind, mode], capture_output=True,
                                text=True, check=True)  # fmt: skip
        row = json.loads(answer.stdout.splitlines()[-1])
        print(f"{kind:<12} {row['status']:<7} {row['peak_rss_mb']:>6.0f} MB {row['wall_s']:>6.2f}s "
              f"{row['sent_mib']:>5.0f} MiB  {str(row['error'])[:110]}")  # fmt: skip


if __name__ == "__main__":
    main()
