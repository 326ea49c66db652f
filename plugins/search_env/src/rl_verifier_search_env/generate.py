"""Generate Fictopedia offline: the corpus and the task set shipped in ``data/``.

``python -m rl_verifier_search_env.generate [--out DIR]`` rewrites ``corpus.jsonl`` and
``fictopedia.jsonl`` (default: this package's ``data`` folder). The output depends only on
the seed, so running it again gives byte-identical files; a test checks the shipped files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rl_verifier_search_env.questions import Question, all_questions
from rl_verifier_search_env.schema import SEARCH_TOOL_SCHEMA
from rl_verifier_search_env.world import SEED, build_world, document_text, title

DATA_DIR = Path(__file__).parent / "data"
CORPUS_FILE = "corpus.jsonl"
TASKS_FILE = "fictopedia.jsonl"

PROMPT = (
    "Fictopedia is an encyclopedia of invented places, people and ships: its facts cannot be "
    "known without searching it. Use the search tool to find the documents you need, then "
    "answer.\n\nQuestion: {question}\n\nCite the id of every document you used in square "
    "brackets, like [fx-012], and give the final answer inside <answer></answer>."
)


def corpus_rows(seed: str = SEED) -> list[dict[str, str]]:
    """Documents as ``{"id", "title", "text"}``, in id order."""
    return [
        {"id": e.doc_id, "title": title(e), "text": document_text(e)}
        for e in build_world(seed).entities()
    ]


def task_rows(seed: str = SEED) -> list[dict[str, Any]]:
    """Tasks as rl_verifier Task rows, ids ``fictopedia-001`` onwards."""
    return [task_row(n, q) for n, q in enumerate(all_questions(build_world(seed)), start=1)]


def task_row(number: int, question: Question) -> dict[str, Any]:
    return {
        "id": f"fictopedia-{number:03d}",
        "prompt": PROMPT.format(question=question.text),
        "verifier": "tool_calls",
        "reference": {
            "answers": list(question.answers),
            "support": [e.doc_id for e in question.support],
            "tools": [SEARCH_TOOL_SCHEMA],
        },
        "metadata": {"kind": question.kind, "hops": question.hops},
    }


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def render(seed: str = SEED) -> dict[str, str]:
    """File name -> content of every generated file."""
    return {CORPUS_FILE: jsonl(corpus_rows(seed)), TASKS_FILE: jsonl(task_rows(seed))}


def write(out: Path = DATA_DIR, seed: str = SEED) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in render(seed).items():
        path = out / name
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder")
    parser.add_argument("--seed", default=SEED)
    args = parser.parse_args(argv)
    for path in write(args.out, args.seed):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
