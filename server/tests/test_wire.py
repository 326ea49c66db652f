"""Our protobuf bodies against the SDK's own encoders and decoders."""

from __future__ import annotations

import numpy as np
import pytest
from tinker import types
from tinker.proto import tinker_public_pb2 as pb
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.proto.response_conv import deserialize_proto_response

from rl_verifier.base.errors import UserError
from rl_verifier_server.base.limits import MAX_DATUM_PARTS, MAX_DATUMS, ServerLimits
from rl_verifier_server.runtime import FwdBwdResult, SampledSequence
from rl_verifier_server.tinker.wire import (
    ForwardBackwardCall,
    decode_forward_backward,
    encode_forward_backward,
    encode_samples,
    parse_forward_backward,
)


def server_decode(body: bytes) -> ForwardBackwardCall:
    """``body`` as the server decodes it, within the default limits."""
    return decode_forward_backward(
        parse_forward_backward(body), ServerLimits().max_loss_input_values
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
    call = server_decode(sdk_request_bytes([dense, sparse], clip_low_threshold=0.7))
    assert (call.model_id, call.seq_id, call.loss_fn) == ("s1:train:0", 3, "ppo")
    assert call.config == {"clip_low_threshold": pytest.approx(0.7)}
    first, second = call.data
    assert list(first.tokens) == [1, 2, 3]
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
        server_decode(b"\xff\xff\xff")


def test_text_config_values_are_refused() -> None:
    request = pb.ForwardBackwardRequest(model_id="m", seq_id=1, loss_fn="ppo")
    request.loss_fn_config_v2["mode"].text = "x"
    with pytest.raises(UserError, match="mode"):
        server_decode(request.SerializeToString())


def sparse_zeros(kind: int, shape: list[int]) -> pb.Tensor:
    """A CSR tensor of zeros: a few bytes of row pointers standing for ``shape``'s values."""
    tensor = pb.Tensor(dtype=kind, shape=shape)
    tensor.sparse_csr.crow_indices = np.zeros(shape[0] + 1, np.int64).tobytes()
    return tensor


def one_token_request(datums: int) -> pb.ForwardBackwardRequest:
    request = pb.ForwardBackwardRequest(model_id="m", seq_id=1, loss_fn="cross_entropy")
    for _ in range(datums):
        datum = request.data.add()
        datum.model_input.add().encoded_text.tokens = np.ones(1, np.int32).tobytes()
    return request


def test_a_call_past_its_size_limits_is_refused_before_it_is_decoded() -> None:
    one = types.Datum(
        model_input=types.ModelInput.from_ints([1]), loss_fn_inputs={"target_tokens": [2]}
    )
    assert len(server_decode(sdk_request_bytes([one] * MAX_DATUMS)).data) == MAX_DATUMS
    with pytest.raises(UserError, match=f"at most {MAX_DATUMS} datums in one call, got 1025"):
        server_decode(sdk_request_bytes([one] * (MAX_DATUMS + 1)))
    chunked = one_token_request(1)
    for _ in range(MAX_DATUM_PARTS):
        chunked.data[0].model_input.add().encoded_text.tokens = np.ones(1, np.int32).tobytes()
    with pytest.raises(UserError, match=f"at most {MAX_DATUM_PARTS} model-input chunks"):
        server_decode(chunked.SerializeToString())
    deep = one_token_request(1)
    deep.data[0].loss_fn_inputs["weights"].CopyFrom(sparse_zeros(pb.DTYPE_FLOAT32, [1, 1, 1]))
    with pytest.raises(UserError, match=r"datum 0: loss_fn_inputs\['weights'\]: shape"):
        server_decode(deep.SerializeToString())


def test_sparse_loss_inputs_expand_to_no_more_than_a_dense_body_could_hold() -> None:
    limits = ServerLimits(max_body_mb=16)
    budget = limits.max_loss_input_values  # 4 bytes of --max-body-mb each
    assert budget == 16 * 1024 * 1024 // 4
    per_tensor = 1 << 20
    request = one_token_request(budget // per_tensor + 1)
    for datum in request.data:
        sparse = sparse_zeros(pb.DTYPE_INT64, [1, per_tensor])
        datum.loss_fn_inputs["target_tokens"].CopyFrom(sparse)
    body = request.SerializeToString()
    assert len(body) < 1000  # a few bytes of row pointers standing for 5 Mi values
    with pytest.raises(UserError, match=f"more than the {budget} of one call"):
        decode_forward_backward(parse_forward_backward(body), budget)
    del request.data[-1]
    call = decode_forward_backward(request, budget)
    assert [d.inputs["target_tokens"].shape for d in call.data] == [(1, per_tensor)] * 4
