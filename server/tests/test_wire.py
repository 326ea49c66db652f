"""Our protobuf bodies against the SDK's own encoders and decoders."""

from __future__ import annotations

import numpy as np
import pytest
from tinker import types
from tinker.proto import tinker_public_pb2 as pb
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.proto.response_conv import deserialize_proto_response

from rl_verifier.errors import UserError
from rl_verifier_server.runtime import FwdBwdResult, SampledSequence
from rl_verifier_server.wire import (
    decode_forward_backward,
    encode_forward_backward,
    encode_samples,
)


def sdk_request_bytes(data: list[types.Datum], **config: float) -> bytes:
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(
            data=data, loss_fn="ppo", loss_fn_config=config or None
        ),
        model_id="s1:train:0",
        seq_id=3,
    )
    return bytes(forward_backward_request_to_proto(request).SerializeToString())


def test_decodes_what_the_sdk_encodes() -> None:
    import torch

    dense = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={
            "target_tokens": [2, 3, 4],
            "logprobs": [-1.0, -2.0, -0.5],
            "advantages": [0.5, 0.5, 0.5],
        },
    )
    sparse_targets = torch.zeros((3, 4), dtype=torch.int64)
    sparse_targets[0, 1] = 7
    sparse = types.Datum(
        model_input=types.ModelInput.from_ints([9, 8, 7]),
        loss_fn_inputs={"target_tokens": sparse_targets, "weights": torch.eye(3, 4)},
    )
    call = decode_forward_backward(sdk_request_bytes([dense, sparse], clip_low_threshold=0.7))
    assert (call.model_id, call.seq_id, call.loss_fn) == ("s1:train:0", 3, "ppo")
    assert call.config == {"clip_low_threshold": pytest.approx(0.7)}
    first, second = call.data
    assert first.tokens == [1, 2, 3]
    assert first.inputs["target_tokens"].tolist() == [2, 3, 4]
    assert first.inputs["target_tokens"].dtype == np.int64
    assert first.inputs["logprobs"].dtype == np.float32
    assert second.inputs["target_tokens"].tolist() == sparse_targets.tolist()
    assert np.array_equal(second.inputs["weights"], np.eye(3, 4, dtype=np.float32))


def test_sdk_decodes_our_forward_backward_output() -> None:
    result = FwdBwdResult(
        outputs=[
            {
                "logprobs": np.array([-1.0, -2.0], np.float32),
                "elementwise_loss": np.zeros(2, np.float32),
            },
            {"logprobs": np.array([-3.0], np.float32), "elementwise_loss": np.ones(1, np.float32)},
        ],
        metrics={"loss:sum": 4.5},
    )
    decoded = deserialize_proto_response(
        encode_forward_backward(result), types.ForwardBackwardOutput
    )
    assert isinstance(decoded, types.ForwardBackwardOutput)
    assert decoded.metrics == {"loss:sum": 4.5}
    assert decoded.loss_fn_outputs[0]["logprobs"].tolist() == [-1.0, -2.0]
    assert decoded.loss_fn_outputs[1]["logprobs"].shape == [1]
    assert decoded.loss_fn_outputs[1]["elementwise_loss"].tolist() == [1.0]


def test_sdk_decodes_our_samples() -> None:
    sequences = [
        SampledSequence(tokens=[5, 6], logprobs=[-0.5, -0.25], stop_reason="stop"),
        SampledSequence(tokens=[7], logprobs=[-1.0], stop_reason="length"),
    ]
    body = encode_samples(sequences, [float("nan"), -1.5, -2.5])
    decoded = deserialize_proto_response(body, types.SampleResponse)
    assert isinstance(decoded, types.SampleResponse)
    assert [s.tokens for s in decoded.sequences] == [[5, 6], [7]]
    assert [s.stop_reason for s in decoded.sequences] == ["stop", "length"]
    assert decoded.sequences[0].logprobs == [-0.5, -0.25]
    assert decoded.prompt_logprobs == [None, -1.5, -2.5]


def test_garbage_is_a_user_error() -> None:
    with pytest.raises(UserError, match="malformed forward_backward body"):
        decode_forward_backward(b"\xff\xff\xff")


def test_text_config_values_are_refused() -> None:
    request = pb.ForwardBackwardRequest(model_id="m", seq_id=1, loss_fn="ppo")
    request.loss_fn_config_v2["mode"].text = "x"
    with pytest.raises(UserError, match="mode"):
        decode_forward_backward(request.SerializeToString())
