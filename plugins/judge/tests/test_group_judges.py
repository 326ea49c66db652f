"""``judge_rank`` and ``judge_pair`` with the scripted judge: shuffled neutral labels,
recorded order, normalised rewards, the reverse pass and position consistency."""

from __future__ import annotations

from fake_judge import FakeJudge
from judge_helpers import CAPITAL, OPEN, pair, rank

from rl_verifier import Scorer, Status
from rl_verifier_judge.ranking import disagreement, display_order

GROUP = ["Be well!", "You are kind and I hope your day goes well.", "Thanks!", "Hi"]


def test_rank_scores_the_group_in_one_call(fake_judge: FakeJudge) -> None:
    scores = rank(fake_judge.settings("scripted-rank"), GROUP)
    assert fake_judge.requests["scripted-rank"] == 1
    expected = [max(10 - len(t) // 10, 0) / 10 for t in GROUP]
    assert [s.reward for s in scores] == expected
    group = scores[0].info["group"]
    assert sorted(group["order"]) == [0, 1, 2, 3] and group["size"] == 4
    assert sorted(s.info["label"] for s in scores) == ["A", "B", "C", "D"]
    assert group["judge"]["calls"] == 1 and group["judge"]["prompt_tokens"] == 100


def test_the_shuffle_depends_on_content_not_input_order() -> None:
    order = display_order(OPEN, GROUP)
    reordered = display_order(OPEN, GROUP[::-1])
    assert [GROUP[i] for i in order] == [GROUP[::-1][i] for i in reordered]
    assert order != [0, 1, 2, 3] or display_order(OPEN, [*GROUP, "x"]) != [0, 1, 2, 3, 4]


def test_reverse_pass_measures_position_bias(fake_judge: FakeJudge) -> None:
    fair = rank(fake_judge.settings(reverse_pass=True), GROUP)
    assert fair[0].info["group"]["disagreement"] == 0.0
    assert fair[0].info["group"]["judge"]["calls"] == 2
    biased = rank(fake_judge.settings("biased", reverse_pass=True), GROUP)
    assert biased[0].info["group"]["disagreement"] > 0
    assert all(len(s.info["pass_scores"]) == 2 for s in biased)
    with Scorer("judge_rank", fake_judge.settings("biased", reverse_pass=True)) as scorer:
        scorer.score_group(OPEN, GROUP)
    assert disagreement([1, 2, 3], [3, 2, 1]) == 1.0 and disagreement([1, 2], [1, 2]) == 0.0


def test_rank_batch_metrics_count_each_group_once(fake_judge: FakeJudge) -> None:
    import asyncio

    from rl_verifier import Completion, Reward, Sample, make_executor, score_batch
    from rl_verifier_judge import JudgeRankVerifier

    reward = Reward.of(JudgeRankVerifier(fake_judge.settings(reverse_pass=True)))
    jobs = [
        (reward, Sample(OPEN, Completion(task_id=OPEN.id, completion=c), i))
        for i, c in enumerate(GROUP)
    ]
    result = asyncio.run(score_batch(jobs, make_executor("inline")))
    assert result.metrics["judge_calls"] + result.metrics["judge_cached_calls"] == 2
    assert result.metrics["position_disagreement"] == 0.0
    assert result.metrics["judge_error_rate"] == 0.0


def test_pair_against_the_reference_in_both_orders(fake_judge: FakeJudge) -> None:
    scores = pair(fake_judge.settings(), ["Paris", "Lyon"])
    assert [(s.status, s.reward) for s in scores] == [(Status.OK, 0.5), (Status.OK, 0.0)]
    assert all(s.info["position_consistent"] for s in scores)
    assert all(s.info["judge"]["calls"] + s.info["judge"]["cached_calls"] == 2 for s in scores)
    biased = pair(fake_judge.settings("biased"), ["Lyon"])
    assert biased[0].reward == 0.5 and biased[0].info["position_consistent"] is False


def test_pair_round_robin_within_the_group(fake_judge: FakeJudge) -> None:
    scores = pair(fake_judge.settings(against="group"), ["Paris", "Lyon", "Paris!"])
    assert [s.reward for s in scores] == [0.75, 0.0, 0.75]
    assert scores[0].info["games"] == 4


def test_pair_without_a_reference_says_so(fake_judge: FakeJudge) -> None:
    [score] = pair(fake_judge.settings(), ["hello"], task=OPEN)
    assert score.status is Status.ERROR and "reference.completion" in (score.error or "")
    assert CAPITAL.reference["completion"] == "Paris."
