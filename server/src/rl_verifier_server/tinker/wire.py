"""Protobuf bodies of the Tinker protocol, using the message definitions the SDK ships.

Requests in: ``ForwardBackwardRequest``. Results out: ``ForwardBackwardOutput`` and
``SampleResponse``. Everything else on the wire is JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tinker.proto import tinker_public_pb2 as pb

from rl_verifier import UserError
from rl_verifier_server.base.limits import MAX_DATUM_PARTS, MAX_DATUMS
from rl_verifier_server.runtime import DatumIn, FwdBwdResult, SampledSequence
from rl_verifier_server.state.stability import Provenance, Span

NUMPY_OF_DTYPE: dict[int, Any] = {
    pb.DTYPE_FLOAT32: np.float32,
    pb.DTYPE_INT64: np.int64,
    pb.DTYPE_INT32: np.int32,
}
DTYPE_OF_NUMPY = {np.dtype(np.float32): pb.DTYPE_FLOAT32, np.dtype(np.int64): pb.DTYPE_INT64}
MAX_TENSOR_ELEMENTS = 1 << 24  # bounds what a small sparse tensor may expand to
MAX_TENSOR_DIMS = 2  # a loss input is [N] or [N, K]


@dataclass
class ForwardBackwardCall:
    model_id: str
    seq_id: int
    loss_fn: str
    forward_only: bool
    config: dict[str, float]
    data: list[DatumIn]
    provenance: list[Provenance | None]  # per datum, when the client attached it


def decode_tensor(name: str, tensor: Any) -> np.ndarray:
    """A proto ``Tensor`` (dense or CSR) as a dense numpy array."""
    kind = NUMPY_OF_DTYPE.get(tensor.dtype)
    if kind is None:
        raise UserError(f"loss_fn_inputs['{name}']: unsupported dtype {tensor.dtype}")
    shape = tuple(int(s) for s in tensor.shape)
    if any(s < 0 for s in shape) or np.prod(shape, dtype=np.float64) > MAX_TENSOR_ELEMENTS:
        raise UserError(f"loss_fn_inputs['{name}']: shape {list(shape)} is not allowed")
    try:
        if tensor.WhichOneof("encoding") == "sparse_csr":
            return decode_sparse(name, tensor.sparse_csr, shape, kind)
        flat = np.frombuffer(tensor.dense, dtype=kind).copy()
    except ValueError as exc:  # a buffer that is not a whole number of values
        raise UserError(f"loss_fn_inputs['{name}']: malformed tensor: {exc}") from None
    if shape:
        if int(np.prod(shape)) != flat.size:
            raise UserError(
                f"loss_fn_inputs['{name}']: {flat.size} values do not fill shape {list(shape)}"
            )
        return flat.reshape(shape)
    return flat


def decode_sparse(name: str, csr: Any, shape: tuple[int, ...], kind: Any) -> np.ndarray:
    values = np.frombuffer(csr.values, dtype=kind)
    rows = np.frombuffer(csr.crow_indices, dtype=np.int64)
    cols = np.frombuffer(csr.col_indices, dtype=np.int64)
    malformed = UserError(f"loss_fn_inputs['{name}']: malformed sparse tensor")
    if len(shape) != 2 or len(rows) != shape[0] + 1 or len(cols) != len(values):
        raise malformed
    if rows[0] != 0 or rows[-1] != len(values) or np.any(np.diff(rows) < 0):
        raise malformed
    if len(cols) and (cols.min() < 0 or cols.max() >= shape[1]):
        raise malformed
    dense = np.zeros(shape, dtype=kind)
    dense[np.repeat(np.arange(shape[0]), np.diff(rows)), cols] = values  # no loop over rows
    return dense


def decode_tokens(datum: Any, index: int) -> np.ndarray:
    """A datum's model input as one int32 array (never a list: a body may hold millions)."""
    chunks = []
    for chunk in datum.model_input:
        if chunk.WhichOneof("chunk") != "encoded_text":
            raise UserError(f"datum {index}: only text model inputs are supported")
        try:
            chunks.append(np.frombuffer(chunk.encoded_text.tokens, dtype=np.int32))
        except ValueError:  # a buffer that is not a whole number of int32 values
            raise UserError(f"datum {index}: malformed model input tokens") from None
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)


def check_size(request: Any, max_values: int) -> None:
    """Refuse a call past ``MAX_DATUMS`` datums or ``MAX_DATUM_PARTS`` parts, or whose loss
    inputs would expand past ``max_values`` values, reading only counts and shapes."""
    count = len(request.data)
    if count > MAX_DATUMS:
        raise UserError(
            f"forward_backward takes at most {MAX_DATUMS} datums in one call, got {count} "
            "(send them in several calls, as the SDK does)"
        )
    parts = len(request.loss_fn_config) + len(request.loss_fn_config_v2)
    values = 0.0
    for index, datum in enumerate(request.data):
        parts += len(datum.model_input) + len(datum.loss_fn_inputs)
        parts += len(datum.model_input_spans) + len(datum.loss_fn_input_spans)
        if parts > MAX_DATUM_PARTS:
            raise UserError(
                f"forward_backward takes at most {MAX_DATUM_PARTS} model-input chunks, loss "
                "inputs, provenance spans and config entries in one call"
            )
        for name, tensor in datum.loss_fn_inputs.items():
            shape = list(tensor.shape)
            if len(shape) > MAX_TENSOR_DIMS or any(s < 0 for s in shape):
                raise UserError(
                    f"datum {index}: loss_fn_inputs['{name}']: shape {shape} is not allowed"
                )
            values += float(np.prod(shape, dtype=np.float64))
    if values > max_values:
        raise UserError(
            f"forward_backward's loss inputs would hold {values:.0f} values, more than the "
            f"{max_values} of one call (4 bytes each within rlv serve --max-body-mb)"
        )


def decode_spans(spans: Any, index: int) -> list[Span]:
    decoded = []
    for span in spans:
        arm = span.WhichOneof("span")
        if arm is None:
            raise UserError(f"datum {index}: a provenance span names neither prompt nor sample")
        run = getattr(span, arm)
        decoded.append(
            Span(arm == "sampled_tokens", run.sequence_id, int(run.offset), int(run.length))
        )
    return decoded


def decode_provenance(datum: Any, index: int) -> Provenance | None:
    if not datum.model_input_spans and not datum.loss_fn_input_spans:
        return None
    return Provenance(
        decode_spans(datum.model_input_spans, index),
        decode_spans(datum.loss_fn_input_spans, index),
    )


def parse_forward_backward(body: bytes) -> Any:
    """The ``ForwardBackwardRequest`` message in ``body`` (its ids, before it is decoded)."""
    request = pb.ForwardBackwardRequest()
    try:
        request.ParseFromString(body)
    except Exception as exc:  # noqa: BLE001 - protobuf raises its own DecodeError types
        raise UserError(f"malformed forward_backward body: {exc}") from None
    return request


def decode_forward_backward(request: Any, max_values: int) -> ForwardBackwardCall:
    """The call in a parsed ``request``, its size checked (``check_size``) before any datum
    is decoded; its loss inputs may hold ``max_values`` values in all."""
    check_size(request, max_values)
    config: dict[str, float] = {key: float(v) for key, v in request.loss_fn_config.items()}
    for key, value in request.loss_fn_config_v2.items():
        if value.WhichOneof("value") == "text":
            raise UserError(f"loss_fn_config['{key}']: text values are not supported")
        config[key] = float(value.number)
    data = [
        DatumIn(
            tokens=decode_tokens(datum, i),
            inputs={name: decode_tensor(name, t) for name, t in datum.loss_fn_inputs.items()},
        )
        for i, datum in enumerate(request.data)
    ]
    return ForwardBackwardCall(
        model_id=request.model_id,
        seq_id=int(request.seq_id),
        loss_fn=request.loss_fn,
        forward_only=bool(request.forward_only),
        config=config,
        data=data,
        provenance=[decode_provenance(datum, i) for i, datum in enumerate(request.data)],
    )


def encode_forward_backward(result: FwdBwdResult) -> bytes:
    """One ``ArrayRecord`` holding every output field for every datum."""
    out = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord")
    record = out.loss_fn_outputs.add()
    record.num_datums = len(result.outputs)
    names = list(result.outputs[0]) if result.outputs else []
    for name in names:
        arrays = [np.ascontiguousarray(datum[name]) for datum in result.outputs]
        dtype = DTYPE_OF_NUMPY.get(arrays[0].dtype)
        if dtype is None:
            arrays = [a.astype(np.float32) for a in arrays]
            dtype = pb.DTYPE_FLOAT32
        field = record.fields[name]
        field.dtype = dtype
        field.data = b"".join(a.tobytes() for a in arrays)
        field.offsets = np.cumsum([0] + [a.nbytes for a in arrays], dtype=np.int64).tobytes()
        if arrays[0].ndim > 1:
            field.trailing_shape.extend(arrays[0].shape[1:])
    for key, value in result.metrics.items():
        out.metrics[key] = float(value)
    return bytes(out.SerializeToString())


def encode_samples(
    sequences: list[SampledSequence], prompt_logprobs: list[float] | None = None
) -> bytes:
    response = pb.SampleResponse()
    for sequence in sequences:
        item = response.sequences.add()
        stopped = sequence.stop_reason == "stop"
        item.stop_reason = pb.STOP_REASON_STOP if stopped else pb.STOP_REASON_LENGTH
        item.tokens = np.asarray(sequence.tokens, dtype=np.int32).tobytes()
        item.logprobs = np.asarray(sequence.logprobs, dtype=np.float32).tobytes()
    if prompt_logprobs is not None:
        response.prompt_logprobs = np.asarray(prompt_logprobs, dtype=np.float32).tobytes()
    return bytes(response.SerializeToString())
