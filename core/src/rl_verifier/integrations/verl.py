"""verl: rl-verifier rewards as verl custom reward functions.

In a verl config::

    reward.custom_reward_function.path=pkg://rl_verifier.integrations.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async
    +reward.custom_reward_function.reward_kwargs.routes.openai/gsm8k=exact_match

``compute_score(data_source, solution_str, ground_truth, extra_info)`` scores one
response with the verifier its ``data_source`` routes to and returns a dict with the
same keys for every sample (verl stacks them into columns): ``score``, ``rlv_status``,
``rlv_judged`` (1.0, or 0.0 for a ``timeout``/``error``), ``rlv_spec``,
``rlv_components`` and any components named in ``components``. ``compute_score_batch``
is the same for verl's batch reward manager; it can give a failed check the mean score
of the judged responses to the same prompt, which a GRPO-style advantage reads as 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rl_verifier.base.contracts import Score, Task
from rl_verifier.base.errors import UserError
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.integrations.common import group_means, prompt_id
from rl_verifier.scoring.engine import ExecutorKind
from rl_verifier.scoring.resolve import spec_names
from rl_verifier.scoring.scorer import Scorer

Failed = Literal["zero", "group_mean"]
Result = dict[str, Any]

_scorers: dict[str, Scorer] = {}
_scorers_lock = threading.Lock()


def route(
    data_source: str,
    extra_info: Mapping[str, Any] | None,
    spec: str | None = None,
    routes: Mapping[str, str] | None = None,
) -> str:
    """The reward spec for a sample: ``spec``; else ``routes[data_source]`` (or
    ``routes["*"]``); else ``extra_info["verifier"]``; else ``data_source`` itself when it
    names an installed verifier."""
    if spec:
        return spec
    routes = routes or {}
    if data_source in routes:
        return routes[data_source]
    if "*" in routes:
        return routes["*"]
    named = (extra_info or {}).get("verifier")
    if isinstance(named, str) and named:
        return named
    if data_source in get_plugins().registry:
        return data_source
    raise UserError(
        f"data_source '{data_source}' names no verifier: give "
        "custom_reward_function.reward_kwargs.routes (data_source -> reward spec), a "
        "spec, or extra_info.verifier"
    )


def scorer_for(
    spec: str,
    settings: Mapping[str, Any] | None = None,
    executor: ExecutorKind = "process",
    workers: int | None = None,
) -> Scorer:
    """This process's scorer for ``spec``: made once, kept until exit. ``settings`` are
    keyed by verifier name, whatever the spec (routes may mix verifiers)."""
    names = spec_names(spec)
    settings = settings or {}
    own = {n: settings[n] for n in names if n in settings}
    spec_settings = own.get(names[0], {}) if len(names) == 1 else own
    key = json.dumps([spec, spec_settings, executor, workers], sort_keys=True, default=str)
    with _scorers_lock:
        if key not in _scorers:
            _scorers[key] = Scorer(spec, spec_settings, executor=executor, workers=workers)
        return _scorers[key]


def make_task(data_source: str, ground_truth: Any, extra_info: Mapping[str, Any] | None) -> Task:
    """A task from verl's fields: ``ground_truth`` is the reference when it is a mapping
    (or a string holding a JSON object), else ``reference.answer``;
    ``extra_info.reference`` adds keys (``None`` values, which parquet gives the keys
    other rows have, are left out); ``extra_info.prompt`` (or ``question``) is the
    prompt."""
    info = dict(extra_info or {})
    reference = reference_of(ground_truth)
    if isinstance(info.get("reference"), Mapping):
        reference.update({k: v for k, v in info["reference"].items() if v is not None})
    prompt = info.get("prompt", info.get("question", ""))
    prompt = prompt if isinstance(prompt, str | list) else str(prompt)
    index = info.get("index")
    task_id = (
        f"{data_source}:{index}"
        if index is not None
        else prompt_id([data_source, prompt, reference])
    )
    return Task.model_validate({"id": task_id, "prompt": prompt, "reference": reference})


def reference_of(ground_truth: Any) -> dict[str, Any]:
    if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        try:
            parsed = json.loads(ground_truth)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    if isinstance(ground_truth, Mapping):
        return {k: v for k, v in ground_truth.items() if v is not None}
    if ground_truth is None or ground_truth == "":
        return {}
    return {"answer": ground_truth}


def result(
    score: Score, spec: str, components: Sequence[str] = (), failed_score: float = 0.0
) -> Result:
    """verl's dict for one score; the same keys for every sample."""
    judged = score.status.judged
    out: Result = {
        "score": score.reward if judged else failed_score,
        "rlv_status": score.status.value,
        "rlv_judged": 1.0 if judged else 0.0,
        "rlv_spec": spec,
        "rlv_components": dict(score.components),
    }
    for name in components:
        out[name] = score.components.get(name) if judged else None
    return out


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    spec: str | None = None,
    routes: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    components: Sequence[str] = (),
    failed_score: float = 0.0,
    executor: ExecutorKind = "process",
    workers: int | None = None,
    **_verl: Any,
) -> Result:
    """verl's custom reward function: score one response. A ``timeout``/``error`` gets
    ``failed_score`` (verl has no per-sample skip here) and ``rlv_judged`` 0.0."""
    chosen = route(data_source, extra_info, spec, routes)
    scorer = scorer_for(chosen, settings, executor, workers)
    task = make_task(data_source, ground_truth, extra_info)
    return result(scorer.score(task, solution_str), chosen, components, failed_score)


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    spec: str | None = None,
    routes: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    components: Sequence[str] = (),
    failed_score: float = 0.0,
    executor: ExecutorKind = "process",
    workers: int | None = None,
    **_verl: Any,
) -> Result:
    """``compute_score`` for verl's async reward loop (samples scored concurrently)."""
    chosen = route(data_source, extra_info, spec, routes)
    scorer = scorer_for(chosen, settings, executor, workers)
    task = make_task(data_source, ground_truth, extra_info)
    score = await scorer.ascore(task, solution_str)
    return result(score, chosen, components, failed_score)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    spec: str | None = None,
    routes: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    components: Sequence[str] = (),
    failed: Failed = "group_mean",
    executor: ExecutorKind = "process",
    workers: int | None = None,
    **_verl: Any,
) -> list[Result]:
    """verl's batch reward function: score a whole batch concurrently. A failed check
    gets ``failed="group_mean"``: the mean score of the judged responses to the same
    prompt (0.0 when none was judged), so its group-relative advantage is 0; or
    ``"zero"``."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(data_sources)
    tasks = [
        make_task(source, truth, info)
        for source, truth, info in zip(data_sources, ground_truths, infos, strict=True)
    ]
    specs = [
        route(source, info, spec, routes) for source, info in zip(data_sources, infos, strict=True)
    ]
    scores: list[Score | None] = [None] * len(tasks)
    for chosen in dict.fromkeys(specs):
        positions = [i for i, s in enumerate(specs) if s == chosen]
        scorer = scorer_for(chosen, settings, executor, workers)
        scored = scorer.score_many([(tasks[i], solution_strs[i]) for i in positions])
        for i, score in zip(positions, scored, strict=True):
            scores[i] = score
    done = [s for s in scores if s is not None]
    fills = group_means([t.id for t in tasks], done) if failed == "group_mean" else {}
    return [
        result(score, chosen, components, fills.get(task.id, 0.0))
        for score, chosen, task in zip(done, specs, tasks, strict=True)
    ]


def close_scorers() -> None:
    """Close this process's scorers (they also close at exit)."""
    with _scorers_lock:
        scorers = list(_scorers.values())
        _scorers.clear()
    for scorer in scorers:
        scorer.close()
