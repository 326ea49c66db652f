"""ModelHost: one base model, many LoRA training adapters and frozen sampler snapshots.

Not thread-safe by design: the server calls every method from one compute thread.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer

from rl_verifier.errors import UserError
from rl_verifier_server.runtime import checkpoint, optim
from rl_verifier_server.runtime.lora import DEFAULT_LORA_ALPHA, AdapterSet, LayerMap, lora_config
from rl_verifier_server.runtime.losses import (
    MetricTotals,
    PreparedDatum,
    check_tokens,
    get_loss,
    prepare_datum,
)
from rl_verifier_server.runtime.sampling import (
    SamplingParams,
    StopCriteria,
    generate,
    make_generator,
    token_logprobs,
)
from rl_verifier_server.runtime.types import (
    CheckpointInfo,
    DatumIn,
    FwdBwdResult,
    LoraSpec,
    SampledSequence,
)


@dataclass
class _Trainer:
    lora: str  # internal peft adapter name
    spec: LoraSpec
    alpha: float
    targets: tuple[str, ...]
    optimizer: torch.optim.AdamW
    step: int = 0


@dataclass
class _Sampler:
    spec: LoraSpec
    alpha: float
    targets: tuple[str, ...]
    lora: str | None  # internal peft adapter name while resident
    directory: Path | None  # where its weights are on disk, if anywhere
    spilled: bool = False  # directory is our own spill folder


class ModelHost:
    """One base model loaded once; any number of LoRA adapters and sampler snapshots on it.

    Training adapters (``create_adapter``...) stay in memory until dropped. Sampler snapshots
    are adapters too; at most ``max_resident_samplers`` are kept in memory (least recently
    used are evicted and reloaded on demand from their directory; a snapshot without a
    directory is first written to a private spill folder, removed by ``close()``).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        name: str,
        *,
        max_context: int | None = None,
        lora_alpha: float = DEFAULT_LORA_ALPHA,
        max_resident_samplers: int = 8,
        max_batch_tokens: int = 8192,
    ) -> None:
        param = next(model.parameters())
        self.name = name
        self.tokenizer = tokenizer
        self.device = str(param.device)
        self.dtype = param.dtype
        self.lora_alpha = float(lora_alpha)
        self.max_resident_samplers = max(1, int(max_resident_samplers))
        self.max_batch_tokens = max(1, int(max_batch_tokens))
        model.eval()
        model.requires_grad_(False)
        self._model = model
        hf_model: Any = model  # a transformers PreTrainedModel
        embed_in = hf_model.get_input_embeddings()
        embed_out = hf_model.get_output_embeddings()
        rows = [embed_in.weight.shape[0]]
        if embed_out is not None:
            rows.append(embed_out.weight.shape[0])
        self.vocab_size = int(min(rows))
        config = model.config
        self.max_context = int(
            max_context or getattr(config, "max_position_embeddings", None) or 4096
        )
        self.eos_token_ids = _eos_ids(model, tokenizer)
        self._layers = LayerMap.of(model)
        self._loras = AdapterSet(model)
        self._trainers: dict[str, _Trainer] = {}
        self._samplers: dict[str, _Sampler] = {}
        self._resident: OrderedDict[str, None] = OrderedDict()  # LRU of resident samplers
        self._spill_root: Path | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        forward_args = inspect.signature(model.forward).parameters
        self._logits_to_keep = "logits_to_keep" in forward_args
        self._cache_arg = "cache" if "cache" in forward_args else "past_key_values"

    @classmethod
    def load(
        cls,
        model_dir: Path,
        name: str,
        device: str | None = None,
        **options: Any,
    ) -> ModelHost:
        """Load a HF causal LM. device None: cuda when available, else cpu.

        bf16 on cuda, fp32 on cpu. ``options`` go to the constructor (max_context,
        lora_alpha, max_resident_samplers, max_batch_tokens).
        """
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.float32 if device == "cpu" else torch.bfloat16
        # transformers < 4.56 calls the argument torch_dtype
        dtype_arg = "dtype" if _version_at_least(transformers.__version__, 4, 56) else "torch_dtype"
        model: Any = AutoModelForCausalLM.from_pretrained(str(model_dir), **{dtype_arg: dtype})
        model.to(device)
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        return cls(model, tokenizer, name, **options)

    def close(self) -> None:
        """Remove the spill folder of evicted snapshots (the host stays usable)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
            self._spill_root = None
            for sampler in self._samplers.values():
                if sampler.spilled and sampler.lora is None:
                    sampler.directory = None  # gone with the spill folder
            self._samplers = {
                k: s for k, s in self._samplers.items() if s.lora is not None or s.directory
            }

    # Training adapters --------------------------------------------------------------------

    def create_adapter(self, adapter_id: str, spec: LoraSpec) -> None:
        """A fresh LoRA adapter (B = 0, so outputs equal the base model's), seeded by spec.seed."""
        if adapter_id in self._trainers:
            raise UserError(f"training adapter '{adapter_id}' already exists")
        spec.validate()
        self._new_trainer(adapter_id, spec, self.lora_alpha, tuple(self._layers.targets(spec)))

    def _new_trainer(
        self, adapter_id: str, spec: LoraSpec, alpha: float, targets: tuple[str, ...]
    ) -> _Trainer:
        config = lora_config(spec.rank, alpha, list(targets))
        lora = self._loras.add(config, spec.seed)
        trainer = _Trainer(lora, spec, alpha, targets, optim.new_optimizer(self._params(lora)))
        self._trainers[adapter_id] = trainer
        return trainer

    def _params(self, lora: str) -> dict[str, nn.Parameter]:
        return self._loras.params(lora)

    def adapter_parameters(self, adapter_id: str) -> dict[str, nn.Parameter]:
        """The live LoRA parameters of a training adapter, by peft checkpoint key."""
        return self._params(self._trainer(adapter_id).lora)

    def has_adapter(self, adapter_id: str) -> bool:
        return adapter_id in self._trainers

    def adapter_step(self, adapter_id: str) -> int:
        """How many optimizer steps the adapter has taken (restored by checkpoints)."""
        return self._trainer(adapter_id).step

    def drop_adapter(self, adapter_id: str) -> None:
        trainer = self._trainer(adapter_id)
        trainer.optimizer.state.clear()
        self._loras.remove(trainer.lora)
        del self._trainers[adapter_id]

    def _trainer(self, adapter_id: str) -> _Trainer:
        trainer = self._trainers.get(adapter_id)
        if trainer is None:
            raise UserError(f"unknown training adapter '{adapter_id}'")
        return trainer

    def forward_backward(
        self,
        adapter_id: str,
        data: list[DatumIn],
        loss_fn: str,
        config: dict[str, float] | None,
        backward: bool,
    ) -> FwdBwdResult:
        """Tinker's forward (backward=False: no grads) or forward_backward (grads accumulate
        until optim_step). Every datum is checked before any compute."""
        trainer = self._trainer(adapter_id)
        loss = get_loss(loss_fn)
        resolved = loss.resolve_config(config)
        if not data:
            raise UserError("forward_backward needs at least one datum")
        prepared = [
            prepare_datum(i, d, loss, self.vocab_size, self.max_context) for i, d in enumerate(data)
        ]
        self._loras.activate(trainer.lora, trainable=backward)
        outputs: list[dict[str, np.ndarray]] = [{} for _ in prepared]
        totals = MetricTotals()
        for batch in self._microbatches(prepared):
            context = torch.enable_grad() if backward else torch.inference_mode()
            with context:
                inputs = [{k: v.to(self.device) for k, v in d.inputs.items()} for d in batch]
                lps = self._target_logprobs(batch)
                total: torch.Tensor | None = None
                for datum, lp, datum_inputs in zip(batch, lps, inputs, strict=True):
                    terms = loss.fn(lp, datum_inputs, resolved)
                    datum_loss = terms.elementwise.sum()
                    total = datum_loss if total is None else total + datum_loss
                    totals.add(terms, datum_inputs)
                    outputs[datum.index] = {
                        "logprobs": _numpy(lp),
                        "elementwise_loss": _numpy(terms.elementwise),
                    }
                if backward and total is not None:
                    torch.autograd.backward(total)
        return FwdBwdResult(outputs, totals.metrics())

    def _microbatches(self, data: list[PreparedDatum]) -> list[list[PreparedDatum]]:
        batches: list[list[PreparedDatum]] = []
        current: list[PreparedDatum] = []
        longest = 0
        for datum in data:
            grown = max(longest, datum.length)
            if current and grown * (len(current) + 1) > self.max_batch_tokens:
                batches.append(current)
                current, grown = [], datum.length
            current.append(datum)
            longest = grown
        if current:
            batches.append(current)
        return batches

    def _target_logprobs(self, batch: list[PreparedDatum]) -> list[torch.Tensor]:
        """Logprob of each datum's target tokens (right-padded batch; pads never attended)."""
        lengths = [d.length for d in batch]
        longest = max(lengths)
        ids = torch.zeros((len(batch), longest), dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for row, datum in enumerate(batch):
            ids[row, : datum.length] = datum.tokens
            mask[row, : datum.length] = 1
        ragged = min(lengths) != longest
        logits = self._model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device) if ragged else None,
            use_cache=False,
        ).logits
        trailing = {tuple(datum.targets.shape[1:]) for datum in batch}
        if len(trailing) > 1:  # mixed 1-D and 2-D targets: one datum at a time
            return [
                token_logprobs(logits[row, : datum.length], datum.targets.to(self.device))
                for row, datum in enumerate(batch)
            ]
        # One gather over the whole batch, then cheap row slices of the [B, T] result:
        # slicing the [B, T, V] logits per datum makes each slice's backward write a full
        # [B, T, V] gradient, which is quadratic in the batch size.
        targets = torch.zeros((len(batch), longest, *trailing.pop()), dtype=torch.long)
        for row, datum in enumerate(batch):
            targets[row, : datum.length] = datum.targets
        logprobs = token_logprobs(logits, targets.to(self.device))
        return [logprobs[row, : datum.length] for row, datum in enumerate(batch)]

    def optim_step(
        self,
        adapter_id: str,
        learning_rate: float,
        beta1: float = 0.9,
        beta2: float = 0.95,
        eps: float = 1e-12,
        weight_decay: float = 0.0,
        grad_clip_norm: float = 0.0,
    ) -> dict[str, float]:
        """One AdamW step (torch semantics, decoupled weight decay) on the accumulated grads,
        which are then cleared. grad_clip_norm 0 = no clipping. Without any accumulated grads
        nothing changes."""
        trainer = self._trainer(adapter_id)
        optim.check_adam(learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm)
        norm, stepped = optim.adamw_step(
            trainer.optimizer,
            self._params(trainer.lora),
            learning_rate,
            beta1,
            beta2,
            eps,
            weight_decay,
            grad_clip_norm,
        )
        trainer.step += int(stepped)
        return {"grad_norm:mean": norm, "learning_rate:mean": float(learning_rate)}

    # Checkpoints --------------------------------------------------------------------------

    def save_state(self, adapter_id: str, directory: Path, with_optimizer: bool = True) -> None:
        """Adapter weights, LoraSpec, optimizer state and step count, written atomically."""
        trainer = self._trainer(adapter_id)
        params = self._params(trainer.lora)
        state = optim.optimizer_tensors(trainer.optimizer, params) if with_optimizer else None
        self._write(trainer.lora, "training", trainer, directory, state)

    def _write(
        self,
        lora: str,
        kind: str,
        source: _Trainer | _Sampler,
        directory: Path,
        optimizer_state: dict[str, torch.Tensor] | None,
    ) -> None:
        info = CheckpointInfo(
            kind=kind,
            base_model=self.name,
            spec=source.spec,
            lora_alpha=source.alpha,
            target_modules=source.targets,
            step=source.step if isinstance(source, _Trainer) else 0,
            has_optimizer=optimizer_state is not None,
        )
        weights = {k: p.detach() for k, p in self._params(lora).items()}
        checkpoint.write_checkpoint(
            Path(directory), info, self._loras.config(lora), weights, optimizer_state
        )

    def _read(self, directory: Path) -> CheckpointInfo:
        # The recorded base_model name is not compared with self.name: one model is often
        # known by several names (hub id, local path). Every tensor's name and shape is
        # checked on load instead, which refuses checkpoints of other architectures.
        return checkpoint.read_checkpoint_info(Path(directory))

    def create_adapter_from_state(
        self, adapter_id: str, directory: Path, with_optimizer: bool
    ) -> LoraSpec:
        """A new training adapter restored exactly from a save_state checkpoint."""
        if adapter_id in self._trainers:
            raise UserError(f"training adapter '{adapter_id}' already exists")
        info = self._read(directory)
        if with_optimizer and not info.has_optimizer:
            raise UserError(f"checkpoint at {directory} has no optimizer state")
        trainer = self._new_trainer(adapter_id, info.spec, info.lora_alpha, info.target_modules)
        try:
            self._restore(trainer, directory, info, with_optimizer)
        except BaseException:
            self.drop_adapter(adapter_id)
            raise
        return info.spec

    def load_state(self, adapter_id: str, directory: Path, with_optimizer: bool) -> None:
        """Overwrite an existing adapter's weights (and Adam state, else a fresh optimizer)."""
        trainer = self._trainer(adapter_id)
        info = self._read(directory)
        if with_optimizer and not info.has_optimizer:
            raise UserError(f"checkpoint at {directory} has no optimizer state")
        theirs = (info.spec.rank, info.lora_alpha, info.target_modules)
        if theirs != (trainer.spec.rank, trainer.alpha, trainer.targets):
            raise UserError(
                f"checkpoint at {directory} has LoRA rank {info.spec.rank} (alpha "
                f"{info.lora_alpha:g}) on {list(info.target_modules)}; this training client has "
                f"rank {trainer.spec.rank} (alpha {trainer.alpha:g}) on {list(trainer.targets)}"
            )
        self._restore(trainer, directory, info, with_optimizer)

    def _restore(
        self, trainer: _Trainer, directory: Path, info: CheckpointInfo, with_optimizer: bool
    ) -> None:
        params = self._params(trainer.lora)
        origin = f"checkpoint at {directory}"
        self._loras.load_weights(trainer.lora, checkpoint.read_weights(directory), origin)
        for param in params.values():
            param.grad = None
        trainer.optimizer = optim.new_optimizer(params)
        if with_optimizer:
            state = checkpoint.read_optimizer(directory)
            optim.restore_optimizer(trainer.optimizer, params, state, origin)
        trainer.step = info.step

    # Samplers -----------------------------------------------------------------------------

    def snapshot_sampler(
        self, adapter_id: str, sampler_id: str, directory: Path | None = None
    ) -> None:
        """A frozen copy of the adapter's current weights (replacing any sampler of that id);
        also written to ``directory`` when given."""
        trainer = self._trainer(adapter_id)
        if directory is not None:
            self._write(trainer.lora, "sampler", trainer, Path(directory), None)
        self._forget_sampler(sampler_id)
        config = lora_config(trainer.spec.rank, trainer.alpha, list(trainer.targets))
        lora = self._loras.add(config, 0)
        self._loras.copy_weights(trainer.lora, lora)
        self._samplers[sampler_id] = _Sampler(
            trainer.spec,
            trainer.alpha,
            trainer.targets,
            lora,
            None if directory is None else Path(directory),
        )
        self._touch(sampler_id)

    def load_sampler(self, sampler_id: str, directory: Path) -> None:
        """A sampler from a snapshot directory or a save_state checkpoint (weights only)."""
        info = self._read(directory)
        self._forget_sampler(sampler_id)
        sampler = _Sampler(info.spec, info.lora_alpha, info.target_modules, None, Path(directory))
        self._samplers[sampler_id] = sampler
        try:
            self._resident_lora(sampler_id)
        except BaseException:
            del self._samplers[sampler_id]
            raise

    def relocate_sampler(self, sampler_id: str, directory: Path) -> None:
        """The caller moved the sampler's snapshot folder to ``directory``."""
        sampler = self._samplers.get(sampler_id)
        if sampler is None:
            raise UserError(f"unknown sampler '{sampler_id}'")
        sampler.directory = Path(directory)

    def has_sampler(self, sampler_id: str) -> bool:
        return sampler_id in self._samplers

    def drop_sampler(self, sampler_id: str) -> None:
        if sampler_id not in self._samplers:
            raise UserError(f"unknown sampler '{sampler_id}'")
        self._forget_sampler(sampler_id)

    def _forget_sampler(self, sampler_id: str) -> None:
        sampler = self._samplers.pop(sampler_id, None)
        if sampler is None:
            return
        self._resident.pop(sampler_id, None)
        if sampler.lora is not None:
            self._loras.remove(sampler.lora)
        if sampler.spilled and sampler.directory is not None:
            shutil.rmtree(sampler.directory, ignore_errors=True)

    def _resident_lora(self, sampler_id: str | None) -> str | None:
        """The internal adapter for a sampler id (None: the base model), loading if evicted."""
        if sampler_id is None:
            return None
        sampler = self._samplers.get(sampler_id)
        if sampler is None:
            raise UserError(f"unknown sampler '{sampler_id}'")
        if sampler.lora is None:
            assert sampler.directory is not None
            origin = f"sampler weights at {sampler.directory}"
            config = lora_config(sampler.spec.rank, sampler.alpha, list(sampler.targets))
            lora = self._loras.add(config, 0)
            try:
                self._loras.load_weights(lora, checkpoint.read_weights(sampler.directory), origin)
            except BaseException:
                self._loras.remove(lora)
                raise
            sampler.lora = lora
        self._touch(sampler_id)
        return sampler.lora

    def _touch(self, sampler_id: str) -> None:
        self._resident[sampler_id] = None
        self._resident.move_to_end(sampler_id)
        while len(self._resident) > self.max_resident_samplers:
            victim_id, _ = self._resident.popitem(last=False)
            self._evict(self._samplers[victim_id])

    def _evict(self, sampler: _Sampler) -> None:
        assert sampler.lora is not None
        if sampler.directory is None:
            folder = self._spill_folder() / sampler.lora
            self._write(sampler.lora, "sampler", sampler, folder, None)
            sampler.directory, sampler.spilled = folder, True
        self._loras.remove(sampler.lora)
        sampler.lora = None

    def _spill_folder(self) -> Path:
        if self._spill_root is None:
            self._spill_root = Path(tempfile.mkdtemp(prefix="rlv-samplers-"))
            self._finalizer = weakref.finalize(
                self, shutil.rmtree, str(self._spill_root), ignore_errors=True
            )
        return self._spill_root

    def sample(
        self,
        sampler_id: str | None,
        prompt: list[int],
        num_samples: int,
        max_tokens: int | None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        stop: Sequence[str] | Sequence[int] | str | None = None,
        seed: int | None = None,
    ) -> list[SampledSequence]:
        """``num_samples`` continuations of ``prompt``; see ``runtime.sampling`` for the rules.

        max_tokens None: up to the context length.
        """
        tokens = check_tokens(prompt, self.vocab_size, "prompt")
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise UserError(f"num_samples must be a positive integer, got {num_samples!r}")
        room = self.max_context - len(tokens)
        if max_tokens is None:
            max_tokens = room
        if max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {max_tokens}")
        if max_tokens > room:
            raise UserError(
                f"prompt ({len(tokens)} tokens) + max_tokens ({max_tokens}) exceeds this "
                f"model's context length of {self.max_context}"
            )
        params = SamplingParams(float(temperature), float(top_p), top_k)
        params.validate()
        criteria = StopCriteria.parse(stop, set(self.eos_token_ids), self.tokenizer)
        lora = self._resident_lora(sampler_id)
        self._loras.activate(lora)
        generator = make_generator(torch.device(self.device), seed)
        with torch.inference_mode():
            return generate(
                self._model,
                tokens.to(self.device),
                num_samples,
                max_tokens,
                params,
                criteria,
                generator,
                self._logits_to_keep,
                self._cache_arg,
            )

    def prompt_logprobs(self, sampler_id: str | None, tokens: list[int]) -> list[float]:
        """logprob of tokens[i] given tokens[:i]; NaN at index 0."""
        ids = check_tokens(tokens, self.vocab_size, "prompt")
        if len(ids) > self.max_context:
            raise UserError(
                f"prompt ({len(ids)} tokens) exceeds this model's context length of "
                f"{self.max_context}"
            )
        lora = self._resident_lora(sampler_id)
        self._loras.activate(lora)
        ids = ids.to(self.device)
        scored: list[float] = []
        if len(ids) > 1:
            with torch.inference_mode():
                logits = self._model(input_ids=ids[None, :-1], use_cache=False).logits[0]
                scored = token_logprobs(logits, ids[1:]).tolist()
        return [float("nan"), *scored]


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    array: np.ndarray = tensor.detach().to("cpu", torch.float32).numpy()
    return array


def _eos_ids(model: nn.Module, tokenizer: Any) -> tuple[int, ...]:
    ids: set[int] = set()
    generation = getattr(model, "generation_config", None)
    for value in (getattr(generation, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list | tuple):
            ids.update(int(v) for v in value)
    return tuple(sorted(ids))


def _version_at_least(version: str, major: int, minor: int) -> bool:
    parts = [int("".join(c for c in p if c.isdigit()) or 0) for p in version.split(".")[:2]]
    return [*parts, 0, 0][:2] >= [major, minor]
