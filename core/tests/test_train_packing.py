"""Packing episodes into shifted datums, Tinker datums, and group-relative advantages."""

from __future__ import annotations

import math

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.train.advantages import group_advantages, is_degenerate
from rl_verifier.train.packing import PackedDatum, Segment, pack, supervised, to_datum


def single_turn() -> PackedDatum:
    return pack(
        [Segment([1, 2, 3], sampled=False), Segment([4, 5], sampled=True, logprobs=[-0.1, -0.2])],
        advantage=0.5,
    )


def multi_turn() -> PackedDatum:
    return pack(
        [
            Segment([1, 10, 11], sampled=False),
            Segment([20, 21], sampled=True, logprobs=[-1.0, -2.0]),
            Segment([30, 31, 32], sampled=False),
            Segment([40], sampled=True, logprobs=[-0.5]),
        ],
        advantage=-1.5,
    )


def test_single_turn_packing_is_exact() -> None:
    assert single_turn() == PackedDatum(
        input_tokens=[1, 2, 3, 4],
        target_tokens=[2, 3, 4, 5],
        logprobs=[0.0, 0.0, -0.1, -0.2],
        advantages=[0.0, 0.0, 0.5, 0.5],
        mask=[0.0, 0.0, 1.0, 1.0],
    )
    assert single_turn().num_sampled == 2


def test_multi_turn_masks_tool_tokens() -> None:
    assert multi_turn() == PackedDatum(
        input_tokens=[1, 10, 11, 20, 21, 30, 31, 32],
        target_tokens=[10, 11, 20, 21, 30, 31, 32, 40],
        logprobs=[0.0, 0.0, -1.0, -2.0, 0.0, 0.0, 0.0, -0.5],
        advantages=[0.0, 0.0, -1.5, -1.5, 0.0, 0.0, 0.0, -1.5],
        mask=[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0],
    )


def test_empty_segments_are_ignored() -> None:
    packed = pack(
        [
            Segment([], sampled=False),
            Segment([1, 2, 3], sampled=False),
            Segment([], sampled=True, logprobs=[]),
            Segment([4, 5], sampled=True, logprobs=[-0.1, -0.2]),
        ],
        advantage=0.5,
    )
    assert packed == single_turn()


def test_supervised_masks_only_completion() -> None:
    assert supervised([1, 2], [3, 4]) == PackedDatum(
        input_tokens=[1, 2, 3],
        target_tokens=[2, 3, 4],
        logprobs=[0.0, 0.0, 0.0],
        advantages=[0.0, 0.0, 0.0],
        mask=[0.0, 1.0, 1.0],
    )


@pytest.mark.parametrize(
    ("segments", "advantage", "message"),
    [
        ([Segment([1], False), Segment([2], True)], 1.0, "no logprobs"),
        ([Segment([1], False), Segment([2, 3], True, [-0.1])], 1.0, "2 tokens but 1 logprobs"),
        ([Segment([2, 3], True, [-0.1, -0.2])], 1.0, "cannot start the sequence"),
        ([Segment([1], False, [0.0]), Segment([2], True, [-0.1])], 1.0, "not sampled but has"),
        ([Segment([1], False)], 1.0, "at least 2 tokens"),
        ([Segment([1], False), Segment([2], True, [-0.1])], math.nan, "advantage must be finite"),
    ],
)
def test_pack_rejects_bad_segments(segments: list[Segment], advantage: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pack(segments, advantage)


def test_pack_max_length() -> None:
    segments = [Segment([1, 2, 3], False), Segment([4, 5], True, [-0.1, -0.2])]
    assert pack(segments, 0.5, max_length=5) == single_turn()
    with pytest.raises(ValueError, match="exceeds max_length 4"):
        pack(segments, 0.5, max_length=4)


def test_supervised_needs_a_prompt() -> None:
    with pytest.raises(ValueError, match="cannot start"):
        supervised([], [3, 4])


# --------------------------------------------------------------------------------------------
# Tinker datums


def f32(values: list[float]) -> list[float]:
    """What a float32 tensor gives back for ``values``."""
    np = pytest.importorskip("numpy")
    return [float(np.float32(v)) for v in values]


@pytest.mark.parametrize("packed", [single_turn(), multi_turn()], ids=["single", "multi"])
@pytest.mark.parametrize("loss_fn", ["importance_sampling", "ppo", "cispo", "dro"])
def test_to_datum_rl_losses(packed: PackedDatum, loss_fn: str) -> None:
    pytest.importorskip("tinker")
    from tinker import types

    datum = to_datum(packed, loss_fn)
    assert isinstance(datum, types.Datum)
    assert datum.model_input.to_ints() == packed.input_tokens
    inputs = datum.loss_fn_inputs
    assert set(inputs) == {"target_tokens", "logprobs", "advantages"}
    assert inputs["target_tokens"].dtype == "int64"
    assert inputs["target_tokens"].tolist() == packed.target_tokens
    assert inputs["logprobs"].dtype == "float32"
    assert inputs["logprobs"].tolist() == f32(packed.logprobs)
    assert inputs["advantages"].tolist() == f32(packed.advantages)


@pytest.mark.parametrize("packed", [single_turn(), multi_turn()], ids=["single", "multi"])
def test_to_datum_cross_entropy(packed: PackedDatum) -> None:
    pytest.importorskip("tinker")
    datum = to_datum(packed, "cross_entropy")
    assert datum.model_input.to_ints() == packed.input_tokens
    inputs = datum.loss_fn_inputs
    assert set(inputs) == {"target_tokens", "weights"}
    assert inputs["target_tokens"].tolist() == packed.target_tokens
    assert inputs["weights"].dtype == "float32"
    assert inputs["weights"].tolist() == packed.mask


def test_to_datum_exact_values() -> None:
    pytest.importorskip("tinker")
    datum = to_datum(single_turn())
    assert datum.model_input.to_ints() == [1, 2, 3, 4]
    assert datum.loss_fn_inputs["target_tokens"].tolist() == [2, 3, 4, 5]
    assert datum.loss_fn_inputs["logprobs"].tolist() == f32([0.0, 0.0, -0.1, -0.2])
    assert datum.loss_fn_inputs["advantages"].tolist() == [0.0, 0.0, 0.5, 0.5]
    supervised_datum = to_datum(supervised([1, 2], [3, 4]), "cross_entropy")
    assert supervised_datum.loss_fn_inputs["weights"].tolist() == [0.0, 1.0, 1.0]


def test_to_datum_rejects_unknown_loss_and_ragged_lists() -> None:
    pytest.importorskip("tinker")
    with pytest.raises(UserError, match="unknown loss 'mse'"):
        to_datum(single_turn(), "mse")
    ragged = single_turn()
    ragged.mask = ragged.mask[:-1]
    with pytest.raises(ValueError, match="differ in length"):
        to_datum(ragged)


# --------------------------------------------------------------------------------------------
# Advantages


def test_mean_advantages() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([1.0, 2.0, 3.0, 6.0], "mean") == [-2.0, -1.0, 0.0, 3.0]


def test_std_advantages() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0], "std", eps=0.0) == [1.0, -1.0, -1.0, 1.0]
    std = math.sqrt(3.5)  # population variance of 1, 2, 3, 6 is (4 + 1 + 0 + 9) / 4
    expected = [d / (std + 1e-6) for d in (-2.0, -1.0, 0.0, 3.0)]
    assert group_advantages([1.0, 2.0, 3.0, 6.0], "std") == pytest.approx(expected, abs=1e-12)
    assert group_advantages([2.0, 2.0, 2.0], "std") == [0.0, 0.0, 0.0]


def test_loo_advantages() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0], "loo") == pytest.approx(
        [2 / 3, -2 / 3, -2 / 3, 2 / 3], abs=1e-12
    )
    assert group_advantages([1.0, 2.0, 3.0, 6.0], "loo") == pytest.approx(
        [-8 / 3, -4 / 3, 0.0, 4.0], abs=1e-12
    )
    assert group_advantages([1.0, 3.0], "loo") == [-2.0, 2.0]
    assert group_advantages([0.7], "loo") == [0.0]


def test_small_groups() -> None:
    assert group_advantages([]) == []
    assert group_advantages([0.7], "mean") == [0.0]
    assert group_advantages([0.7], "std") == [0.0]


def test_advantage_errors() -> None:
    with pytest.raises(ValueError, match="unknown advantage method"):
        group_advantages([1.0, 0.0], "median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        group_advantages([1.0, math.nan])


def test_is_degenerate() -> None:
    assert is_degenerate([1.0, 1.0, 1.0])
    assert is_degenerate([0.0, 0.0])
    assert is_degenerate([1.0, 1.0 + 1e-12])
    assert not is_degenerate([1.0, 1.0, 0.0])
    assert is_degenerate([0.5])
    assert is_degenerate([])
    assert not is_degenerate([0.0, 0.1], tol=0.01)
    assert is_degenerate([0.0, 0.1], tol=0.2)
