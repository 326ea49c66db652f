"""Stability info for ``stable_reinforce``: sequences recorded at sampling time, and the
provenance of training datums resolved against them.

A sampling request with ``record_stability_info`` records each sequence it returns under
its ``sequence_id``: the prompt, the sampled tokens and each token's logprob under the
distribution it was drawn from. A recorded sequence belongs to the session that sampled
it and can be trained on for a day after sampling; each training request that uses it
restarts that day. At most ``max_tokens`` tokens stay recorded (the oldest go first).

A datum's provenance (``Datum.with_provenance``) tiles its model input and its
``target_tokens`` with runs naming positions of a recorded sequence's prompt or sampled
tokens. ``resolve`` checks every claim (runs tile their field and lie inside the named
sequence; a sampled run's tokens are the recorded ones, while prompt positions carry no
loss and may hold placeholders, as the cookbook's own recipes send) and turns the target
runs into the loss's ``derived`` inputs: ``sampled`` (1 on sampled tokens) and
``drawn_logprobs``. A non-zero advantage on a position that is not a sampled token is
refused: REINFORCE trains only what was sampled.

Every method runs on the compute thread.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rl_verifier import UserError
from rl_verifier_server.runtime import DatumIn, SampledSequence

KEEP_S = 24 * 3600.0
MAX_RECORDED_TOKENS = 20_000_000  # about 160 MB: an int32 token and a float32 logprob each


@dataclass(frozen=True)
class Span:
    """One provenance run: ``length`` positions from ``offset`` of a sequence's prompt
    (``sampled`` False) or sampled tokens (True)."""

    sampled: bool
    sequence_id: str
    offset: int
    length: int


@dataclass
class Provenance:
    model_input: list[Span]
    loss_fn_inputs: list[Span]


@dataclass
class Recorded:
    session_id: str
    prompt: np.ndarray  # int64 [P]
    tokens: np.ndarray  # int64 [T]
    drawn_logprobs: np.ndarray  # float32 [T]
    expires: float

    @property
    def size(self) -> int:
        return int(self.prompt.size + self.tokens.size)


class StabilityRecords:
    def __init__(
        self, max_tokens: int = MAX_RECORDED_TOKENS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_tokens = max_tokens
        self.clock = clock
        self._items: OrderedDict[str, Recorded] = OrderedDict()  # oldest first
        self._tokens = 0

    def record(
        self,
        session_id: str,
        sequence_ids: Sequence[str],
        prompt: Sequence[int],
        sequences: Sequence[SampledSequence],
    ) -> None:
        prompt_array = np.asarray(prompt, dtype=np.int64)
        for sequence_id, sequence in zip(sequence_ids, sequences, strict=True):
            item = Recorded(
                session_id,
                prompt_array,
                np.asarray(sequence.tokens, dtype=np.int64),
                np.asarray(sequence.drawn_logprobs, dtype=np.float32),
                self.clock() + KEEP_S,
            )
            self._forget(sequence_id)
            self._items[sequence_id] = item
            self._tokens += item.size
        self._expire()

    def release_session(self, session_id: str) -> None:
        for sequence_id in [k for k, v in self._items.items() if v.session_id == session_id]:
            self._forget(sequence_id)

    def __len__(self) -> int:
        return len(self._items)

    def resolve(
        self, session_id: str, index: int, datum: DatumIn, provenance: Provenance | None
    ) -> dict[str, np.ndarray]:
        """The ``derived`` inputs of one datum, from its provenance."""
        where = f"datum {index}"
        if provenance is None:
            raise UserError(
                f"{where} has no provenance: stable_reinforce needs Datum.with_provenance "
                "naming sequences sampled with record_stability_info=True"
            )
        self._expire()
        tokens = np.asarray(datum.tokens, dtype=np.int64)
        self._check_claims(session_id, f"{where} model_input", provenance.model_input, tokens)
        targets = np.asarray(datum.inputs.get("target_tokens", []))
        if targets.ndim != 1:
            raise UserError(f"{where}: stable_reinforce needs 1-D target_tokens")
        targets = targets.astype(np.int64)
        spans = provenance.loss_fn_inputs
        self._check_claims(session_id, f"{where} loss_fn_inputs", spans, targets)
        sampled = np.zeros(targets.shape, np.float32)
        drawn = np.zeros(targets.shape, np.float32)
        position = 0
        for span in spans:
            if span.sampled:
                item = self._items[span.sequence_id]
                stop = span.offset + span.length
                sampled[position : position + span.length] = 1.0
                drawn[position : position + span.length] = item.drawn_logprobs[span.offset : stop]
            position += span.length
        advantages = datum.inputs.get("advantages")
        if advantages is not None and np.shape(advantages) == sampled.shape:
            stray = np.nonzero((np.asarray(advantages) != 0) & (sampled == 0))[0]
            if stray.size:
                raise UserError(
                    f"{where}: advantage {float(np.asarray(advantages)[stray[0]]):g} at position "
                    f"{int(stray[0])}, which is not a sampled token; stable_reinforce accepts "
                    "non-zero advantages on sampled tokens only"
                )
        return {"sampled": sampled, "drawn_logprobs": drawn}

    def _check_claims(
        self, session_id: str, what: str, spans: list[Span], tokens: np.ndarray
    ) -> None:
        """The runs tile ``tokens`` and each names recorded tokens equal to them."""
        total = sum(span.length for span in spans)
        if total != tokens.shape[0]:
            raise UserError(
                f"{what}: provenance runs cover {total} positions, the field has {tokens.shape[0]}"
            )
        position = 0
        for span in spans:
            item = self._get(session_id, span.sequence_id, what)
            source = item.tokens if span.sampled else item.prompt
            part = "sampled tokens" if span.sampled else "prompt"
            stop = span.offset + span.length
            if span.offset < 0 or span.length < 0 or stop > source.size:
                raise UserError(
                    f"{what}: run [{span.offset}, {stop}) lies outside the {source.size} "
                    f"{part} of sequence '{span.sequence_id}'"
                )
            claimed = tokens[position : position + span.length]
            differs = np.nonzero(claimed != source[span.offset : stop])[0]
            if span.sampled and differs.size:
                at = int(differs[0])
                raise UserError(
                    f"{what}: position {position + at} holds token {int(claimed[at])}, but "
                    f"position {span.offset + at} of the {part} of sequence "
                    f"'{span.sequence_id}' is {int(source[span.offset + at])}"
                )
            item.expires = self.clock() + KEEP_S
            position += span.length

    def _get(self, session_id: str, sequence_id: str, what: str) -> Recorded:
        item = self._items.get(sequence_id)
        if item is None:
            raise UserError(
                f"{what}: sequence '{sequence_id}' is not recorded: sample with "
                "record_stability_info=True (recorded sequences are kept for a day after "
                f"their last use, at most {self.max_tokens} tokens in all)"
            )
        if item.session_id != session_id:
            raise UserError(
                f"{what}: sequence '{sequence_id}' was sampled in another session; train in "
                "the session that sampled it"
            )
        return item

    def _forget(self, sequence_id: str) -> None:
        item = self._items.pop(sequence_id, None)
        if item is not None:
            self._tokens -= item.size

    def _expire(self) -> None:
        now = self.clock()
        for sequence_id in [k for k, v in self._items.items() if v.expires <= now]:
            self._forget(sequence_id)
        while self._tokens > self.max_tokens and self._items:
            self._forget(next(iter(self._items)))
