"""Runs ray_cases.py in a network namespace with only loopback, so the local Ray
instance listens on 127.0.0.1 (Ray 2.60 replaces a loopback node address with the
machine's routable one when other interfaces exist)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rlv_loopback import run_cases_loopback_only

pytest.importorskip("ray", reason="Ray is not installed (pip install 'rl-verifier[ray]')")

CASES = Path(__file__).with_name("ray_cases.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ray_executor_cases_in_a_loopback_only_namespace() -> None:
    run_cases_loopback_only(CASES, ROOT, dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
