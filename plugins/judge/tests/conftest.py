"""Make the shared helpers (fake_judge, judge_helpers) importable; keep judge-call caches
inside each test's temporary folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_judge import FakeJudge


@pytest.fixture(autouse=True)
def judge_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "judge-calls.sqlite"
    monkeypatch.setenv("RLV_JUDGE_CACHE", str(path))
    return path


@pytest.fixture(scope="module")
def fake_judge() -> Iterator[FakeJudge]:
    with FakeJudge() as server:
        yield server
