"""taskset:NAME:train / :test: a split by task id alone, disjoint and covering the set."""

from __future__ import annotations

import hashlib

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.scoring.resolve import check_task_source, load_task_source, split_of


def test_splits_are_disjoint_cover_the_set_and_follow_the_id() -> None:
    whole = load_task_source("taskset:exact_match-example")
    train = load_task_source("taskset:exact_match-example:train")
    test = load_task_source("taskset:exact_match-example:test")
    assert set(train) | set(test) == set(whole) and not set(train) & set(test)
    assert test and train
    for task_id in whole:
        bucket = int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 100
        assert (task_id in test) == (bucket < 20)
    assert split_of("sum-1") == split_of("sum-1")  # no state, no order


def test_a_share_near_one_fifth_over_many_ids() -> None:
    share = sum(split_of(f"task-{i}") == "test" for i in range(10_000)) / 10_000
    assert 0.18 < share < 0.22


def test_unknown_set_or_split_is_named() -> None:
    with pytest.raises(UserError, match="unknown task set 'nope'"):
        load_task_source("taskset:nope:test")
    with pytest.raises(UserError, match="unknown task set 'exact_match-example:dev'"):
        check_task_source("taskset:exact_match-example:dev")
