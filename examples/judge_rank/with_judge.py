"""Run a command beside a judge: a local ``rlv serve`` with SmolLM2-135M-Instruct, whose
address reaches the judge verifiers as ``$RLV_JUDGE_BASE_URL``; the server stops when the
command ends. (``rlv train`` starts its own server for the policy, on a port it picks, so
the judge gets this one.)

Run: python examples/judge_rank/with_judge.py rlv train examples/judge_rank/judge_rank.toml
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2


def main(command: list[str]) -> int:
    if not command:
        raise SystemExit(__doc__)
    with tempfile.TemporaryDirectory(prefix="rlv-judge-") as folder:
        data = Path(folder)
        with LocalServer(
            data, preload=(smollm2.SMOLLM2_NAME,), log_path=data / "judge.log"
        ) as server:
            url = f"{server.url}/v1"
            print(f"judge: {smollm2.SMOLLM2_NAME} at {url}", flush=True)
            env = {**os.environ, "RLV_JUDGE_BASE_URL": url}
            return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
