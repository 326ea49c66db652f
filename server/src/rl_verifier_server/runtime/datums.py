"""Checks of a datum against its loss and the model, before any compute: token ids in the
vocabulary, ``loss_fn_inputs`` the loss reads with the shapes it needs, finite values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rl_verifier import UserError
from rl_verifier_server.runtime.losses import CLIP_INPUTS, SEQUENCE_INPUTS, LossDef
from rl_verifier_server.runtime.types import DatumIn


@dataclass
class PreparedDatum:
    """A validated datum: torch tensors on CPU, ready to move to the model's device."""

    index: int
    tokens: Tensor  # int64 [N]
    targets: Tensor  # int64 [N] or [N, K]
    inputs: dict[str, Tensor]  # float32, every other loss_fn_input

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])


def check_tokens(tokens: object, vocab_size: int, what: str) -> Tensor:
    """``tokens`` as an int64 tensor, or a UserError naming ``what``."""
    try:
        array = np.asarray(tokens)
    except (TypeError, ValueError) as error:
        raise UserError(f"{what} must be a list of token ids ({error})") from None
    if array.ndim != 1:
        raise UserError(f"{what} must be a flat list of token ids, got shape {array.shape}")
    if array.size == 0:
        raise UserError(f"{what} is empty")
    array = _as_int(array, what)
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise UserError(
            f"{what} contains token id {bad}, outside this model's vocabulary [0, {vocab_size})"
        )
    return torch.from_numpy(array)


def _as_int(array: np.ndarray, what: str) -> np.ndarray:
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        return array.astype(np.int64)
    raise UserError(f"{what} must hold integer token ids, got dtype {array.dtype}")


def prepare_datum(
    index: int,
    datum: DatumIn,
    loss: LossDef,
    vocab_size: int,
    max_context: int,
    derived: bool = True,
) -> PreparedDatum:
    """``datum`` checked and converted; ``derived`` False: without the inputs the server
    derives from provenance (they are resolved in order, on the compute thread)."""
    where = f"datum {index}"
    n = len(datum.tokens)  # first: a datum may be huge
    if n > max_context:
        raise UserError(f"{where}: {n} tokens exceed this model's context length of {max_context}")
    tokens = check_tokens(datum.tokens, vocab_size, f"{where}: model_input tokens")
    given = dict(datum.inputs)
    allowed = (*loss.required, *loss.optional)
    for key in given:
        if key not in allowed:
            raise UserError(
                f"{where}: loss_fn_inputs['{key}'] is not used by loss '{loss.name}' "
                f"(it takes: {', '.join(allowed)})"
            )
    for key in loss.required:
        if key not in given:
            raise UserError(
                f"{where}: loss '{loss.name}' needs loss_fn_inputs['{key}'] "
                f"(shape [N] = [{n}], one value per model-input token)"
            )
    targets = _check_targets(np.asarray(given.pop("target_tokens")), loss, n, vocab_size, where)
    inputs: dict[str, Tensor] = {}
    for key, value in given.items():
        inputs[key] = _check_floats(np.asarray(value), key, tuple(targets.shape), where)
    for key in loss.derived if derived else ():
        if key not in datum.derived:
            raise UserError(
                f"{where}: loss '{loss.name}' needs provenance (Datum.with_provenance) naming "
                "sequences sampled with record_stability_info=True"
            )
        inputs[key] = _check_floats(np.asarray(datum.derived[key]), key, (n,), where)
    return PreparedDatum(index, tokens, targets, inputs)


def _check_targets(array: np.ndarray, loss: LossDef, n: int, vocab_size: int, where: str) -> Tensor:
    key = f"{where}: loss_fn_inputs['target_tokens']"
    shape_ok = array.ndim == 1 or (loss.multi_target and array.ndim == 2 and array.shape[1] > 0)
    if not shape_ok or array.shape[0] != n:
        expected = f"[N] = [{n}]" + (" or [N, K]" if loss.multi_target else "")
        raise UserError(
            f"{key} has shape {list(array.shape)}; expected {expected} to match the {n} "
            "model-input tokens"
        )
    array = _as_int(array, key)
    if array.min() < 0 or array.max() >= vocab_size:
        bad = int(array.min()) if array.min() < 0 else int(array.max())
        raise UserError(
            f"{key} contains token id {bad}, outside this model's vocabulary [0, {vocab_size})"
        )
    return torch.from_numpy(np.ascontiguousarray(array))


def _check_floats(array: np.ndarray, key: str, shape: tuple[int, ...], where: str) -> Tensor:
    name = f"{where}: loss_fn_inputs['{key}']"
    if array.dtype.kind not in "fiub":
        raise UserError(f"{name} must be numeric, got dtype {array.dtype}")
    if key in CLIP_INPUTS:
        if array.size == 1:
            array = np.full(shape[:1], float(array.reshape(())), np.float32)
        shape = shape[:1]
    elif key in SEQUENCE_INPUTS:
        shape = shape[:1]
    if tuple(array.shape) != shape:
        raise UserError(
            f"{name} has shape {list(array.shape)}; expected {list(shape)} "
            "(the shape of target_tokens)"
        )
    values = array.astype(np.float32)
    if not np.all(np.isfinite(values)):
        raise UserError(f"{name} contains NaN or infinite values")
    return torch.from_numpy(np.ascontiguousarray(values))
