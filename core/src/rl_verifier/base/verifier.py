"""The ``Verifier`` base class every plugin subclasses."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Generic, cast, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypeVar

from rl_verifier.base.content import content_digest
from rl_verifier.base.contracts import Completion, Score, Task, Verdict
from rl_verifier.base.errors import UserError, validation_problems

# Settings that change how a check runs, not what it concludes: kept out of config_hash.
EXECUTION_KEYS = frozenset({"timeout_s", "max_concurrency"})


class VerifierConfig(BaseModel):
    """Base of every verifier's settings. Unknown keys are rejected by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float | None = Field(
        default=None, gt=0, description="Deadline for one sample; default: the verifier's own."
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Samples checked at once; default: the verifier's own."
    )
    invalid_penalty: float = Field(
        default=0.0, description="Reward given when the output cannot be used (status invalid)."
    )


class VerifierMetadata(BaseModel):
    """What a verifier declares about itself."""

    name: str
    description: str
    reward_range: tuple[float, float]
    deterministic: bool
    needs_sandbox: bool
    default_timeout_s: float
    max_concurrency: int | None
    group: bool = False
    min_group_size: int = 1


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regex: {exc}") from None
    return value


Regex = Annotated[str, AfterValidator(_compiles)]
"""A setting holding a regular expression: refused by name when it does not compile."""


class _ContentMatters:
    """Marks a setting that names a file whose content can change a verdict."""


CONTENT_MATTERS = _ContentMatters()
InputFile = Annotated[str, CONTENT_MATTERS]
"""A setting naming a file the verifier reads to judge (a corpus, a word list): the file's
SHA-256, not only its path, enters ``config_hash``, so a rewritten file is another verdict
cache key and another provenance."""


def _marked(annotation: object) -> bool:
    if CONTENT_MATTERS in getattr(annotation, "__metadata__", ()):
        return True
    return any(_marked(argument) for argument in get_args(annotation))


def input_files(config: VerifierConfig) -> Iterator[tuple[str, str]]:
    """Each ``InputFile`` setting that names a file, with the path it names."""
    for name, field in type(config).model_fields.items():
        if CONTENT_MATTERS in field.metadata or _marked(field.annotation):
            value = getattr(config, name)
            if value is not None:
                yield name, str(value)


ConfigT = TypeVar("ConfigT", bound=VerifierConfig, covariant=True, default=VerifierConfig)


class Verifier(Generic[ConfigT]):
    """Judges one completion of one task, or (``group = True``) a task's completions at once.

    Subclasses set ``name`` and ``description`` and implement ``verify`` (``async def``
    or plain ``def``; plain functions run off the event loop). A group verifier sets
    ``group = True`` and implements ``verify_group`` instead: one verdict per completion,
    in order, for groups of at least ``min_group_size``. Settings: subclass
    ``Verifier[MyConfig]`` (``MyConfig`` a ``VerifierConfig``) and ``self.config`` is a
    ``MyConfig``. ``open``/``close`` bracket the use of expensive resources;
    ``batch_metrics`` reports figures over a whole batch.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Config: ClassVar[type[VerifierConfig]] = VerifierConfig
    reward_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    deterministic: ClassVar[bool] = True
    needs_sandbox: ClassVar[bool] = False
    default_timeout_s: ClassVar[float] = 30.0
    max_concurrency: ClassVar[int | None] = None
    group: ClassVar[bool] = False
    min_group_size: ClassVar[int] = 2
    # Settings that change how a check runs, not what it concludes: kept out of config_hash.
    execution_keys: ClassVar[frozenset[str]] = EXECUTION_KEYS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``class V(Verifier[MyConfig])`` needs no ``Config = MyConfig`` as well."""
        super().__init_subclass__(**kwargs)
        if cls.group and cls.verify_group is Verifier.verify_group:
            raise TypeError(f"{cls.__qualname__} sets group = True but has no verify_group()")
        if "Config" in cls.__dict__:
            return
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Verifier:
                [argument] = get_args(base)
                if isinstance(argument, type) and issubclass(argument, VerifierConfig):
                    cls.Config = argument

    def __init__(self, config: VerifierConfig | Mapping[str, Any] | None = None) -> None:
        self._config = cast(ConfigT, self.parse_config(config))

    @property
    def config(self) -> ConfigT:
        """The validated settings."""
        return self._config

    @classmethod
    def parse_config(cls, config: VerifierConfig | Mapping[str, Any] | None) -> VerifierConfig:
        """Validate settings, raising ``UserError`` that names each bad key."""
        if isinstance(config, cls.Config):
            return config
        data = dict(config or {})
        try:
            return cls.Config.model_validate(data)
        except ValidationError as exc:
            raise UserError(describe_config_error(cls.name, exc)) from None

    # Lifecycle and judgement ---------------------------------------------------------

    async def open(self) -> None:
        """Acquire expensive resources (pools, indexes). Called once before use."""

    async def close(self) -> None:
        """Release what ``open`` acquired."""

    def verify(self, task: Task, completion: Completion) -> Verdict | Any:
        """Judge one completion. May be ``async def``."""
        if self.group:
            raise GroupOnly(self.name, 1, self.min_group_size)
        raise NotImplementedError(f"{type(self).__name__} does not implement verify()")

    def verify_group(self, task: Task, completions: Sequence[Completion]) -> Sequence[Any] | Any:
        """Judge a task's completions together (group verifiers only): one verdict each,
        in order. May be ``async def``."""
        raise NotImplementedError(f"{type(self).__name__} is not a group verifier")

    def batch_metrics(self, scores: Sequence[Score]) -> dict[str, float]:
        """Figures over a whole batch (for example calibration error). Default: none."""
        return {}

    # Declared facts ------------------------------------------------------------------

    def bounds(self) -> tuple[float, float]:
        """Lowest and highest reward this configured verifier can give."""
        low, high = self.reward_range
        penalty = self.config.invalid_penalty
        return (min(low, penalty), max(high, penalty))

    @property
    def timeout_s(self) -> float:
        return self.config.timeout_s or self.default_timeout_s

    @property
    def concurrency(self) -> int | None:
        return self.config.max_concurrency or self.max_concurrency

    def cache_inputs(self) -> dict[str, str] | None:
        """Digests of what besides the settings can change a verdict: by default the
        content of each file an ``InputFile`` setting names. Override to add more (call
        ``super()``); return ``None`` when a verdict depends on something that cannot be
        digested (the verifier's verdicts are then never cached). Asked once per instance,
        when its ``config_hash`` is first needed."""
        return {f"file:{name}": content_digest(path) for name, path in input_files(self.config)}

    @functools.cached_property
    def _inputs(self) -> dict[str, str] | None:
        return self.cache_inputs()

    @property
    def cacheable(self) -> bool:
        """Whether the verdict cache may keep this verifier's verdicts: it is
        ``deterministic`` and ``cache_inputs`` could name everything it depends on."""
        return self.deterministic and self._inputs is not None

    @functools.cached_property
    def config_hash(self) -> str:
        """A digest of the settings that can change a verdict and of ``cache_inputs``."""
        return config_hash(self.name, self.config, self.execution_keys, self._inputs)

    @classmethod
    def metadata(cls) -> VerifierMetadata:
        return VerifierMetadata(
            name=cls.name,
            description=cls.description or first_doc_line(cls),
            reward_range=cls.reward_range,
            deterministic=cls.deterministic,
            needs_sandbox=cls.needs_sandbox,
            default_timeout_s=cls.default_timeout_s,
            max_concurrency=cls.max_concurrency,
            group=cls.group,
            min_group_size=cls.min_group_size if cls.group else 1,
        )

    @classmethod
    def is_async(cls) -> bool:
        return inspect.iscoroutinefunction(cls.verify_group if cls.group else cls.verify)


class GroupOnly(UserError):
    """A group verifier was given fewer completions than it can judge together."""

    def __init__(self, name: str, given: int, minimum: int = 2) -> None:
        super().__init__(
            f"verifier '{name}' judges a group of completions of one task at once (at least "
            f"{minimum}); it was given {given}: score the task's completions together "
            "(Scorer.score_group, score_many, or one file holding all of them)"
        )


def config_hash(
    name: str,
    config: VerifierConfig,
    execution_keys: frozenset[str] = EXECUTION_KEYS,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """Stable short hash of the settings that can change a verdict, and of ``inputs`` (the
    digests of the files they name; left out when there are none, so such hashes stay
    what they were)."""
    judged = config.model_dump(mode="json", exclude=set(execution_keys))
    body: dict[str, Any] = {"verifier": name, "config": judged}
    if inputs:
        body["inputs"] = dict(inputs)
    payload = json.dumps(body, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def describe_config_error(name: str, exc: ValidationError) -> str:
    """One phrase per problem, naming the key."""
    problems = validation_problems(exc, noun="config key")
    return f"bad config for verifier '{name}': " + "; ".join(problems)


def first_doc_line(cls: type) -> str:
    doc = inspect.cleandoc(cls.__doc__ or "")
    return doc.splitlines()[0] if doc else ""
