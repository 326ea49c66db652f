"""BFCL parity harness: cases built from bfcl-eval's own data (ground truth and mutations of
it), judged by bfcl-eval's checker and by BFCL mode. Used by test_bfcl_parity.py and by
benchmarks/bfcl_parity_speed.py.

bfcl-eval is installed without its dependencies (plugins/tool_calls/requirements-parity.txt).
Its checker module imports bfcl_eval.constants.model_config (the model table: which model
is a function-calling one, which writes dotted names with underscores), and that table
imports every model's inference client (openai, anthropic, boto3, ...). Those client modules
are the one thing replaced here, by empty placeholder classes: the checker, the type
converters, the data loaders, the decoders and the model table itself are bfcl-eval's own.
"""

from __future__ import annotations

import atexit
import copy
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rl_verifier import Completion, Task
from rl_verifier_tool_calls.verifier import ToolCallsVerifier

BFCL_VERSION = "2026.3.23"
PYTHON_AST = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
SOURCE_AST = ("simple_java", "simple_javascript")
RELEVANCE = ("irrelevance", "live_irrelevance", "live_relevance")
CATEGORIES = PYTHON_AST + SOURCE_AST + RELEVANCE
# Models of bfcl-eval's table whose settings the cases use, and BFCL mode's matching settings.
MODELS = {
    "prompt": "gpt-4.1-2025-04-14",  # prompt model: dotted names kept
    "prompt_json": "gpt-4.1-2025-04-14",  # the same, answering in BFCL's JSON format
    "fc_underscored": "gpt-4.1-2025-04-14-FC",  # function calling, underscore_to_dot
    "fc_dotted": "qwen3-235b-a22b-instruct-2507-FC",  # function calling, dots kept
}
SETTINGS: dict[str, dict[str, Any]] = {
    "prompt": {"model_kind": "prompt"},
    "prompt_json": {"model_kind": "prompt", "return_format": "json"},
    "fc_underscored": {"model_kind": "function_calling"},
    "fc_dotted": {"model_kind": "function_calling", "function_names": "dotted"},
}
HANDLER_PACKAGES = (
    "bfcl_eval.model_handler.api_inference.",
    "bfcl_eval.model_handler.local_inference.",
)


# --------------------------------------------------------------------------------------------
# The official side


class _Placeholders(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves model-handler modules (inference clients) as modules of empty classes."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.startswith(HANDLER_PACKAGES):
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__getattr__ = _placeholder_class  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _placeholder_class(name: str) -> type:
    if name.startswith("__"):  # keep introspection (inspect, pickle) working
        raise AttributeError(name)
    return type(name, (), {})


class Official:
    """bfcl-eval's loaders, decoders and AST checker."""

    def __init__(self) -> None:
        # bfcl-eval creates result/score folders under its project root when imported.
        if "BFCL_PROJECT_ROOT" not in os.environ:
            root = tempfile.mkdtemp(prefix="bfcl-root-")
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            os.environ["BFCL_PROJECT_ROOT"] = root
        placeholders = _Placeholders()
        sys.meta_path.insert(0, placeholders)
        try:
            utils = importlib.import_module("bfcl_eval.utils")
            handler_utils = importlib.import_module("bfcl_eval.model_handler.utils")
            checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
            enums = importlib.import_module("bfcl_eval.constants.enums")
        finally:
            sys.meta_path.remove(placeholders)
        self.utils, self.handler_utils, self.checker, self.enums = (
            utils,
            handler_utils,
            checker,
            enums,
        )

    def questions(self, category: str) -> list[dict[str, Any]]:
        entries = self.utils.load_dataset_entry(
            category, include_prereq=False, include_language_specific_hint=False
        )
        return list(entries)

    def answers(self, category: str) -> list[dict[str, Any]]:
        return list(self.utils.load_ground_truth_entry(category))

    def decode(self, case: Case) -> Any:
        """What the model's handler hands the checker; raises where the handler does."""
        if case.setting.startswith("prompt"):
            fmt = self.enums.ReturnFormat
            language = {"java": fmt.JAVA, "javascript": fmt.JAVASCRIPT}.get(
                case.language, fmt.JSON if case.setting == "prompt_json" else fmt.PYTHON
            )
            return self.handler_utils.default_decode_ast_prompting(case.text, language)
        if case.calls is None:  # a text reply: the handler gets a string, not calls
            raise ValueError("a function-calling handler cannot decode text")
        return [{name: json.loads(json.dumps(args))} for name, args in case.calls]

    def verdict(self, case: Case) -> bool:
        """Whether bfcl-eval accepts the case (its checker raising counts as a rejection)."""
        return self.judgement(case) is None

    def judgement(self, case: Case) -> str | None:
        """None when bfcl-eval accepts the case, else the error type its evaluation runner
        (``eval_runner``'s relevance and AST entry checks) reports; ``checker_error`` where
        its checker raises."""
        try:
            decoded = self.decode(case)
            failed = False
        except Exception:  # noqa: BLE001 - bfcl-eval: any decoding error is "decoder failed"
            decoded, failed = None, True
        if case.category in RELEVANCE:
            has_call = not failed and not self.utils.is_empty_output(decoded)
            if "irrelevance" in case.category:
                return "irrelevance_error:decoder_success" if has_call else None
            return None if has_call else "relevance_error:decoder_failed"
        assert case.answer is not None, "an AST category has possible answers"
        if failed:
            return "ast_decoder:decoder_failed"
        # a decoder that returns None (the JavaScript one, finding no call) is a wrong format
        if not self.utils.is_function_calling_format_output(decoded):
            return "ast_decoder:decoder_wrong_output_format"
        language = self.enums.Language(case.language)
        try:
            result = self.checker.ast_checker(
                case.question["function"],
                decoded,
                case.answer["ground_truth"],
                language,
                case.category,
                MODELS[case.setting],
            )
        except Exception:  # noqa: BLE001 - bfcl-eval's checker raises on a few outputs
            return "checker_error"
        return None if result["valid"] else str(result["error_type"])


# --------------------------------------------------------------------------------------------
# Cases


class Raw(str):
    """Source text written as is (a bare name, an expression) in rendered calls."""

    def __repr__(self) -> str:
        return str(self)


Calls = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    """One model output for one question, under one model setting."""

    category: str
    kind: str
    setting: str
    question: dict[str, Any]
    answer: dict[str, Any] | None
    text: str = ""
    calls: Calls | None = None
    hermes: bool = False  # function calling: calls written as <tool_call> blocks in text

    @property
    def language(self) -> str:
        if "javascript" in self.category:
            return "javascript"
        return "java" if "java" in self.category else "python"

    def completion(self) -> Any:
        """The completion BFCL mode reads: text, or an assistant message with tool calls."""
        if self.setting.startswith("prompt") or self.calls is None:
            return self.text
        if self.hermes:
            return "\n".join(
                f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"
                for name, args in self.calls
            )
        tool_calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(self.calls)
        ]
        return [{"role": "assistant", "content": "", "tool_calls": tool_calls}]

    def task(self) -> Task:
        reference: dict[str, Any] = {"question": self.question}
        if self.answer is not None:
            reference["possible_answer"] = self.answer
        return Task(id=self.question["id"], prompt="", reference=reference)


def python_text(calls: Calls) -> str:
    rendered = [
        f"{name}({', '.join(f'{key}={value!r}' for key, value in args.items())})"
        for name, args in calls
    ]
    return "[" + ", ".join(rendered) + "]"


def _first(acceptable: list[Any], last: bool = False) -> tuple[bool, Any]:
    """Whether to give the parameter, and the value: the first (or last) acceptable one."""
    values = [v for v in acceptable if v != ""]
    if not values or (acceptable and acceptable[0] == "" and not last):
        return False, None
    return True, copy.deepcopy(values[-1] if last else values[0])


def truth_calls(ground_truth: list[Any], last: bool = False) -> Calls:
    calls: Calls = []
    for entry in ground_truth:
        name, params = next(iter(entry.items()))
        args: dict[str, Any] = {}
        for param, acceptable in params.items():
            give, value = _first(acceptable, last)
            if give:
                args[param] = _first_dict_values(value, last)
        calls.append((name, args))
    return calls


def _first_dict_values(value: Any, last: bool) -> Any:
    """A dict answer holds lists of acceptable values per key: pick one for each key."""
    if isinstance(value, dict):
        picked: dict[str, Any] = {}
        for key, options in value.items():
            if isinstance(options, list):
                give, chosen = _first(options, last)
                if give:
                    picked[key] = chosen
            else:
                picked[key] = options
        return picked
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_first_dict_values(v, last) for v in value]
    return value


def _docs(question: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in question["function"]}


def _declared(question: dict[str, Any], name: str, param: str) -> dict[str, Any]:
    doc = _docs(question).get(name, {})
    spec = doc.get("parameters", {}).get("properties", {}).get(param, {})
    return spec if isinstance(spec, dict) else {}


Mutation = Callable[[Calls, dict[str, Any], dict[str, Any]], Calls | None]


def _first_param(
    calls: Calls, question: dict[str, Any], test: Callable[[Any, dict[str, Any]], bool]
) -> tuple[int, str] | None:
    for index, (name, args) in enumerate(calls):
        for param, value in args.items():
            if test(value, _declared(question, name, param)):
                return index, param
    return None


def _set(calls: Calls, where: tuple[int, str] | None, change: Callable[[Any], Any]) -> Calls | None:
    if where is None:
        return None
    out = copy.deepcopy(calls)
    index, param = where
    out[index][1][param] = change(out[index][1][param])
    return out


def _is(kind: type) -> Callable[[Any, dict[str, Any]], bool]:
    return lambda value, spec: type(value) is kind


def _string_with(extra: str, at_end: bool = True) -> Mutation:
    def mutate(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
        where = _first_param(calls, question, lambda v, s: type(v) is str and len(v) > 1)
        if at_end:
            return _set(calls, where, lambda v: v + extra)
        return _set(calls, where, lambda v: v[:1] + extra + v[1:])

    return mutate


def _nested_strings(value: Any, change: Callable[[str], str], depth: int = 0) -> Any:
    if isinstance(value, str) and depth > 1:
        return change(value)
    if isinstance(value, list):
        return [_nested_strings(v, change, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _nested_strings(v, change, depth + 1) for k, v in value.items()}
    return value


def _has_nested_string(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return depth > 1
    if isinstance(value, list):
        return any(_has_nested_string(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_has_nested_string(v, depth + 1) for v in value.values())
    return False


def _optional_params(calls: Calls, answer: dict[str, Any]) -> list[tuple[int, str]]:
    found = []
    for index, entry in enumerate(answer["ground_truth"][: len(calls)]):
        params = next(iter(entry.values()))
        found += [(index, p) for p, acceptable in params.items() if "" in acceptable]
    return found


def _with_optionals(value: Any) -> Mutation:
    def mutate(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
        optional = _optional_params(calls, answer)
        if not optional:
            return None
        out = copy.deepcopy(calls)
        for index, param in optional:
            out[index][1][param] = value
        return out

    return mutate


def _omit_optionals(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
    optional = _optional_params(calls, answer)
    if not optional:
        return None
    out = copy.deepcopy(calls)
    for index, param in optional:
        out[index][1].pop(param, None)
    return out


def _missing_required(
    calls: Calls, question: dict[str, Any], answer: dict[str, Any]
) -> Calls | None:
    name, args = calls[0]
    required = _docs(question).get(name, {}).get("parameters", {}).get("required", [])
    present = [p for p in required if p in args]
    if not present:
        return None
    out = copy.deepcopy(calls)
    del out[0][1][present[0]]
    return out


def _renamed(change: Callable[[str], str]) -> Mutation:
    def mutate(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
        out = [(change(name), args) for name, args in calls]
        return out if out != calls else None

    return mutate


def _wrong(value: Any) -> Any:
    if type(value) is bool:
        return not value
    if type(value) is int:
        return value + 1
    if type(value) is float:
        return value + 1.5
    if type(value) is str:
        return value + " extra"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["extra"]
    if isinstance(value, dict):
        return {**value, "extra_key": "x"}
    return "changed"


def _calls_order(change: Callable[[Calls], Calls]) -> Mutation:
    def mutate(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
        out = change(calls)
        return out if len(calls) > 1 and out != calls else None

    return mutate


def _swap_first_values(
    calls: Calls, question: dict[str, Any], answer: dict[str, Any]
) -> Calls | None:
    """Parallel: two calls to one function with a value exchanged (one-to-one vs greedy)."""
    if len(calls) < 2 or calls[0][0] != calls[1][0]:
        return None
    out = copy.deepcopy(calls)
    shared = [p for p in out[0][1] if p in out[1][1] and out[0][1][p] != out[1][1][p]]
    if not shared:
        return None
    p = shared[-1]
    out[0][1][p], out[1][1][p] = out[1][1][p], out[0][1][p]
    return out


def _int_items(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
    def fits(value: Any, spec: dict[str, Any]) -> bool:
        items = spec.get("items", {})
        floats = isinstance(value, list) and bool(value) and all(type(v) is float for v in value)
        return floats and isinstance(items, dict) and items.get("type") == "float"

    return _set(calls, _first_param(calls, question, fits), lambda v: [int(x) for x in v])


def _raw_identifier(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
    where = _first_param(calls, question, lambda v, s: type(v) is str and v.isidentifier())
    return _set(calls, where, Raw)


# Mutations of the expected calls; each returns None where it does not apply.
MUTATIONS: dict[str, Mutation] = {
    "alternative_values": lambda c, q, a: truth_calls(a["ground_truth"], last=True),
    "omit_optional": _omit_optionals,
    "empty_string_optional": _with_optionals(""),
    "none_optional": _with_optionals(None),
    "wrong_name": _renamed(lambda n: n + "_v2"),
    "underscored_name": _renamed(lambda n: n.replace(".", "_")),
    "missing_required": _missing_required,
    "extra_param": lambda c, q, a: [(c[0][0], {**c[0][1], "unexpected_arg": 1}), *c[1:]],
    "wrong_value": lambda c, q, a: _set(c, _first_param(c, q, lambda v, s: True), _wrong),
    "int_to_float": lambda c, q, a: _set(c, _first_param(c, q, _is(int)), float),
    "float_to_int": lambda c, q, a: _set(c, _first_param(c, q, _is(float)), int),
    "number_to_string": lambda c, q, a: _set(
        c, _first_param(c, q, lambda v, s: type(v) in (int, float)), str
    ),
    "bool_to_string": lambda c, q, a: _set(c, _first_param(c, q, _is(bool)), str),
    "bool_to_int": lambda c, q, a: _set(c, _first_param(c, q, _is(bool)), int),
    "string_to_bool": lambda c, q, a: _set(c, _first_param(c, q, _is(str)), lambda v: True),
    "string_to_int": lambda c, q, a: _set(c, _first_param(c, q, _is(str)), lambda v: 1),
    "single_quote_in_string": _string_with("'"),
    "double_quote_in_string": _string_with('"', at_end=False),
    "tab_in_string": _string_with("\t", at_end=False),
    "newline_in_string": _string_with("\n"),
    "case_space_punctuation": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: type(v) is str and " " in v),
        lambda v: v.upper().replace(" ", "_") + ".",
    ),
    "nested_string_case": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: _has_nested_string(v)),
        lambda v: _nested_strings(v, str.swapcase),
    ),
    "nested_string_spaces": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: _has_nested_string(v)),
        lambda v: _nested_strings(v, lambda t: f" {t} "),
    ),
    "list_as_tuple": lambda c, q, a: _set(c, _first_param(c, q, _is(list)), tuple),
    "list_reversed": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: isinstance(v, list) and len(set(map(repr, v))) > 1),
        lambda v: v[::-1],
    ),
    "ints_in_float_list": _int_items,
    "dict_extra_key": lambda c, q, a: _set(
        c, _first_param(c, q, _is(dict)), lambda v: {**v, "zz": 1}
    ),
    "dict_missing_key": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: isinstance(v, dict) and bool(v)),
        lambda v: dict(list(v.items())[1:]),
    ),
    "list_of_dicts_item_string": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: isinstance(v, list) and bool(v) and isinstance(v[0], dict)),
        lambda v: ["item", *v[1:]],
    ),
    "duplicate_call": lambda c, q, a: [*c, c[0]],
    "missing_call": _calls_order(lambda c: c[:-1]),
    "reversed_calls": _calls_order(lambda c: c[::-1]),
    "rotated_calls": _calls_order(lambda c: [*c[1:], c[0]]),
    "swapped_values": _swap_first_values,
}
# Mutations only text can hold (Python call syntax).
TEXT_MUTATIONS: dict[str, Mutation] = {
    "bare_name_value": _raw_identifier,
    "call_value": lambda c, q, a: _set(
        c, _first_param(c, q, lambda v, s: True), lambda v: Raw("make(1, 2)")
    ),
    "keyword_call_value": lambda c, q, a: _set(
        c, _first_param(c, q, lambda v, s: True), lambda v: Raw("make(x=1)")
    ),
    "subscript_value": lambda c, q, a: _set(
        c, _first_param(c, q, lambda v, s: True), lambda v: Raw("data['k'][0]")
    ),
    "arithmetic_value": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: type(v) in (int, float)),
        lambda v: Raw(f"{v!r} * 2 - {v!r}"),
    ),
    "negated_value": lambda c, q, a: _set(
        c,
        _first_param(c, q, lambda v, s: type(v) in (int, float) and v > 0),
        lambda v: Raw(f"-{v!r}"),
    ),
    "attribute_value": lambda c, q, a: _set(
        c, _first_param(c, q, lambda v, s: True), lambda v: Raw("math.pi")
    ),
}
TEXT_WRAPPERS: dict[str, Callable[[str, Calls], str | None]] = {
    "no_brackets": lambda t, c: t[1:-1] if len(c) == 1 else None,
    "code_fence_python": lambda t, c: f"```python\n{t}\n```",
    "code_fence_plain": lambda t, c: f"```\n{t}\n```",
    "leading_prose": lambda t, c: f"Here are the calls: {t}",
    "positional_argument": lambda t, c: t.replace("(", "(1, ", 1) if c and c[0][1] else None,
    "duplicate_keyword": lambda t, c: t.replace("(", "(unexpected_arg=1, unexpected_arg=2, ", 1),
    "kwargs_splat": lambda t, c: t.replace("(", "(**{'k': 1}, ", 1),
    "quoted_text": lambda t, c: f"'{t}'",
    "tuple_of_calls": lambda t, c: "(" + t[1:-1] + ",)",
    "empty_list": lambda t, c: "[]",
    "empty_text": lambda t, c: "",
    "prose_only": lambda t, c: "I cannot answer that with the given functions.",
}


def _text(calls: Calls) -> str:
    return python_text(calls)


def python_cases(official: Official, category: str) -> Iterator[Case]:
    for question, answer in zip(
        official.questions(category), official.answers(category), strict=True
    ):
        truth = truth_calls(answer["ground_truth"])
        base: dict[str, Any] = {"category": category, "question": question, "answer": answer}
        text = _text(truth)
        yield Case(kind="ground_truth", setting="prompt", text=text, **base)
        for kind, mutate in {**MUTATIONS, **TEXT_MUTATIONS}.items():
            calls = mutate(truth, question, answer)
            if calls is not None:
                yield Case(kind=kind, setting="prompt", text=_text(calls), **base)
        for kind, wrap in TEXT_WRAPPERS.items():
            wrapped = wrap(text, truth)
            if wrapped is not None:
                yield Case(kind=kind, setting="prompt", text=wrapped, **base)
        yield from _function_calling_cases(truth, base)


def _function_calling_cases(truth: Calls, base: dict[str, Any]) -> Iterator[Case]:
    underscored = [(name.replace(".", "_"), args) for name, args in truth]
    question, answer = base["question"], base["answer"]
    for setting, calls in (("fc_underscored", underscored), ("fc_dotted", truth)):
        yield Case(kind="ground_truth", setting=setting, calls=calls, **base)
        yield Case(kind="text_reply", setting=setting, text=_text(truth), **base)
        yield Case(kind="ground_truth_hermes", setting=setting, calls=calls, hermes=True, **base)
        for kind in ("underscored_name", "wrong_value", "int_to_float", "none_optional",
                     "empty_string_optional", "reversed_calls", "ints_in_float_list",
                     "string_to_bool", "swapped_values", "missing_required"):  # fmt: skip
            mutated = MUTATIONS[kind](calls, question, answer)
            if kind == "underscored_name":
                mutated = truth if setting == "fc_underscored" else underscored
                kind = "dotted_name" if setting == "fc_underscored" else kind
                if mutated == calls:
                    continue
            if mutated is not None:
                yield Case(kind=kind, setting=setting, calls=mutated, **base)
                if kind in ("wrong_value", "missing_required"):
                    yield Case(
                        kind=kind + "_hermes", setting=setting, calls=mutated, hermes=True, **base
                    )
    yield from _json_cases(truth, base)


def json_text(calls: Calls) -> str:
    return json.dumps([{"function": name, "parameters": args} for name, args in calls])


JSON_WRAPPERS: dict[str, Callable[[str], str]] = {
    "leading_prose": lambda t: "Here are the calls: " + t,
    "code_fence_json": lambda t: f"```json\n{t}\n```",
    "name_arguments_keys": lambda t: t.replace('"function":', '"name":').replace(
        '"parameters":', '"arguments":'
    ),
    "not_json": lambda t: t[:-2],
    "python_syntax": lambda t: "[f(a=1)]",
}


def _json_cases(truth: Calls, base: dict[str, Any]) -> Iterator[Case]:
    question, answer = base["question"], base["answer"]
    text = json_text(truth)
    yield Case(kind="ground_truth", setting="prompt_json", text=text, **base)
    for kind in ("wrong_value", "int_to_float", "none_optional", "empty_string_optional",
                 "reversed_calls", "underscored_name", "missing_required", "extra_param",
                 "duplicate_call", "string_to_bool"):  # fmt: skip
        mutated = MUTATIONS[kind](truth, question, answer)
        if mutated is not None:
            yield Case(kind=kind, setting="prompt_json", text=json_text(mutated), **base)
    for kind, wrap in JSON_WRAPPERS.items():
        yield Case(kind=kind, setting="prompt_json", text=wrap(text), **base)


# --------------------------------------------------------------------------------------------
# Java and JavaScript: values are source text


JAVA_ELEMENT = {
    "String": "String",
    "integer": "int",
    "long": "long",
    "char": "char",
    "any": "Object",
}


def _java_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_source(value: Any, java_type: str, item_type: str = "any") -> str:
    """``value`` (a ground-truth value) written as Java source for a ``java_type`` parameter."""
    if isinstance(value, str) and java_type not in ("String", "char"):
        return value  # a variable name, or source text already
    if java_type == "String":
        return _java_string(str(value))
    if java_type == "char":
        return f"'{value}'"
    if java_type == "boolean":
        return "true" if value else "false"
    if java_type == "long":
        return f"{value}L"
    if java_type == "float":
        return f"{value}f"
    if java_type == "Array":
        items = ", ".join(java_source(v, item_type) for v in value)
        return f"new {JAVA_ELEMENT.get(item_type, 'Object')}[]{{{items}}}"
    if java_type == "ArrayList":
        items = ", ".join(java_source(v, item_type) for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if java_type == "HashMap":
        puts = " ".join(f"put({_java_string(k)}, {_java_literal(v)});" for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _java_literal(value: Any) -> str:
    if isinstance(value, str):
        return _java_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def js_source(value: Any, js_type: str, item_type: str = "any") -> str:
    """``value`` written as JavaScript source for a ``js_type`` parameter."""
    if isinstance(value, str) and js_type != "String":
        return value
    if js_type == "String":
        return json.dumps(value)
    if js_type == "Boolean" or isinstance(value, bool):
        return "true" if value else "false"
    if js_type == "Bigint":
        return f"{value}n"
    if js_type == "array":
        return "[" + ", ".join(js_source(v, item_type) for v in value) + "]"
    if js_type == "dict":
        pairs = ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    return str(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def source_calls(truth: Calls, question: dict[str, Any], language: str) -> Calls:
    """The expected calls with every value written as Java or JavaScript source."""
    render = java_source if language == "java" else js_source
    out: Calls = []
    for name, args in truth:
        written = {}
        for param, value in args.items():
            spec = _declared(question, name, param)
            items = spec.get("items", {})
            item_type = items.get("type", "any") if isinstance(items, dict) else "any"
            written[param] = render(value, spec.get("type", "any"), item_type)
        out.append((name, written))
    return out


def source_text(calls: Calls) -> str:
    rendered = [f"{name}({', '.join(f'{k}={v}' for k, v in args.items())})" for name, args in calls]
    return "[" + ", ".join(rendered) + "]"


def _source_edit(test: Callable[[str], bool], change: Callable[[str], str]) -> Mutation:
    def mutate(calls: Calls, question: dict[str, Any], answer: dict[str, Any]) -> Calls | None:
        return _set(calls, _first_param(calls, question, lambda v, s: test(v)), change)

    return mutate


def _is_number(text: str) -> bool:
    return text.lstrip("-").replace(".", "", 1).isdigit()


SOURCE_MUTATIONS: dict[str, Mutation] = {
    "wrong_name": MUTATIONS["wrong_name"],
    "missing_required": _missing_required,
    "extra_param": lambda c, q, a: [(c[0][0], {**c[0][1], "unexpectedArg": "1"}), *c[1:]],
    "omit_optional": _omit_optionals,
    "wrong_value": _source_edit(lambda v: True, lambda v: v + "X"),
    "quoted_value": _source_edit(lambda v: not v.startswith('"'), lambda v: f'"{v}"'),
    "unquoted_string": _source_edit(
        lambda v: v.startswith('"') and v.endswith('"'), lambda v: v[1:-1]
    ),
    "single_quoted_string": _source_edit(
        lambda v: v.startswith('"') and v.endswith('"'), lambda v: f"'{v[1:-1]}'"
    ),
    "string_case": _source_edit(lambda v: v.startswith('"'), str.upper),
    "suffix_dropped": _source_edit(
        lambda v: v[-1:] in ("L", "f", "n") and _is_number(v[:-1]), lambda v: v[:-1]
    ),
    "suffix_added": _source_edit(lambda v: _is_number(v), lambda v: v + "L"),
    "decimal_added": _source_edit(lambda v: v.lstrip("-").isdigit(), lambda v: v + ".0"),
    "boolean_flipped": _source_edit(
        lambda v: v in ("true", "false"), lambda v: "false" if v == "true" else "true"
    ),
    "boolean_capitalised": _source_edit(lambda v: v in ("true", "false"), str.capitalize),
    "list_items_reversed": _source_edit(
        lambda v: v.count(",") >= 1 and v.endswith(("}", ")", "]")),
        lambda v: ", ".join(reversed(v.split(", "))),
    ),
    "list_braces": _source_edit(
        lambda v: v.startswith("new ") and "[]{" in v, lambda v: v[v.index("{") :]
    ),
    "spaces_removed": _source_edit(lambda v: ", " in v, lambda v: v.replace(", ", ",")),
    "duplicate_call": lambda c, q, a: [*c, c[0]],
}
SOURCE_WRAPPERS: dict[str, Callable[[str], str]] = {
    "semicolon": lambda t: t[:-1] + ";]",
    "no_brackets": lambda t: t[1:-1],
    "leading_prose": lambda t: "Call: " + t,
    "empty_text": lambda t: "",
}


def source_cases(official: Official, category: str) -> Iterator[Case]:
    language = "javascript" if "javascript" in category else "java"
    for question, answer in zip(
        official.questions(category), official.answers(category), strict=True
    ):
        base: dict[str, Any] = {"category": category, "question": question, "answer": answer}
        truth = source_calls(truth_calls(answer["ground_truth"]), question, language)
        text = source_text(truth)
        yield Case(kind="ground_truth", setting="prompt", text=text, **base)
        for kind, mutate in SOURCE_MUTATIONS.items():
            calls = mutate(truth, question, answer)
            if calls is not None:
                yield Case(kind=kind, setting="prompt", text=source_text(calls), **base)
                yield Case(kind=kind, setting="fc_dotted", calls=calls, **base)
        for kind, wrap in SOURCE_WRAPPERS.items():
            yield Case(kind=kind, setting="prompt", text=wrap(text), **base)
        for setting in ("fc_dotted", "fc_underscored"):
            yield Case(kind="ground_truth", setting=setting, calls=truth, **base)
        raw = truth_calls(answer["ground_truth"])  # JSON values, not source text
        yield Case(kind="json_values", setting="fc_dotted", calls=raw, **base)


# --------------------------------------------------------------------------------------------
# Relevance and irrelevance: is there a call at all


def _placeholder(spec: dict[str, Any]) -> Any:
    kind = spec.get("type") if isinstance(spec, dict) else None
    return {"integer": 1, "float": 1.5, "boolean": True, "array": [], "dict": {}}.get(
        str(kind), "x"
    )


def relevance_cases(official: Official, category: str) -> Iterator[Case]:
    for question in official.questions(category):
        base: dict[str, Any] = {"category": category, "question": question, "answer": None}
        doc = (question["function"] or [{"name": "lookup", "parameters": {}}])[0]
        required = doc["parameters"].get("required", [])
        properties = doc["parameters"].get("properties", {})
        call: Calls = [(doc["name"], {p: _placeholder(properties.get(p, {})) for p in required})]
        texts = {
            "prose": "None of the functions can answer this.",
            "empty_list": "[]",
            "empty_text": "",
            "call": python_text(call),
            "two_calls": python_text(call * 2),
            "broken_call": python_text(call)[:-2],
            "bare_call_no_args": f"{doc['name']}()",
            "list_of_numbers": "[1, 2]",
        }
        for kind, text in texts.items():
            yield Case(kind=kind, setting="prompt", text=text, **base)
        for setting in ("fc_dotted", "fc_underscored"):
            yield Case(kind="call", setting=setting, calls=call, **base)
            yield Case(kind="text_reply", setting=setting, text="No function fits.", **base)


def all_cases(official: Official) -> list[Case]:
    cases: list[Case] = []
    for category in PYTHON_AST:
        cases += python_cases(official, category)
    for category in SOURCE_AST:
        cases += source_cases(official, category)
    for category in RELEVANCE:
        cases += relevance_cases(official, category)
    return cases


# --------------------------------------------------------------------------------------------
# Judging


_VERIFIERS: dict[str, ToolCallsVerifier] = {}


def ours(case: Case) -> bool:
    """Whether BFCL mode accepts the case (reward 1 with status ok)."""
    return our_judgement(case) is None


def our_judgement(case: Case) -> str | None:
    """None when BFCL mode accepts the case, else its ``info.error_type``."""
    verifier = _VERIFIERS.get(case.setting)
    if verifier is None:
        verifier = ToolCallsVerifier({"mode": "bfcl", "bfcl": SETTINGS[case.setting]})
        _VERIFIERS[case.setting] = verifier
    task = case.task()
    verdict = verifier.verify(task, Completion(task_id=task.id, completion=case.completion()))
    if verdict.status.value != "ok":
        raise AssertionError(f"{case.question['id']} {case.kind}: {verdict.status} {verdict.error}")
    if verdict.reward == 1.0:
        return None
    return str(verdict.info.get("error_type"))


@dataclass
class Tally:
    """Agreement of one category."""

    cases: int = 0
    agree: int = 0
    truth: int = 0
    truth_official: int = 0
    truth_ours: int = 0
    rejected: int = 0  # cases both checkers reject
    same_error: int = 0  # ... with the same error type
    error_examples: list[tuple[Case, str, str]] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return self.agree / self.cases if self.cases else 1.0

    @property
    def error_agreement(self) -> float:
        return self.same_error / self.rejected if self.rejected else 1.0


def compare(
    official: Official, cases: list[Case]
) -> tuple[dict[str, Tally], list[tuple[Case, bool, bool]]]:
    """Per-category agreement (of verdicts, and of error types where both reject) and every
    disagreement of verdicts (case, official, ours)."""
    tallies: dict[str, Tally] = {c: Tally() for c in CATEGORIES}
    differ: list[tuple[Case, bool, bool]] = []
    for case in cases:
        their_error, my_error = official.judgement(case), our_judgement(case)
        theirs, mine = their_error is None, my_error is None
        tally = tallies[case.category]
        if their_error is not None and my_error is not None:
            tally.rejected += 1
            tally.same_error += their_error == my_error
            if their_error != my_error and len(tally.error_examples) < 10:
                tally.error_examples.append((case, their_error, my_error))
        tally.cases += 1
        tally.agree += theirs == mine
        if case.kind == "ground_truth" and case.setting == "prompt":
            tally.truth += 1
            tally.truth_official += theirs
            tally.truth_ours += mine
        if theirs != mine:
            differ.append((case, theirs, mine))
    return tallies, differ
