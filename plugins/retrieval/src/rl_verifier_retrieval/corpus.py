"""Documents and corpus files: ``{"id", "title"?, "text"}`` or Search-R1 ``{"id", "contents"}``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_verifier import UserError


@dataclass(frozen=True)
class Document:
    """One retrievable passage."""

    id: str
    text: str
    title: str = ""

    @property
    def indexed_text(self) -> str:
        """What BM25 sees: the title, then the text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def load_corpus(path: Path) -> list[Document]:
    """Read a JSONL corpus; a malformed line raises ``UserError`` naming ``file:line``."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read corpus {path}: {exc.strerror or exc}") from None
    docs: list[Document] = []
    seen: set[str] = set()
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            doc = parse_row(parse_json(line, where), where)
            if doc.id in seen:
                raise UserError(f"{where}: duplicate document id {doc.id!r}")
            seen.add(doc.id)
            docs.append(doc)
    return docs


def parse_json(line: str, where: str) -> Mapping[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def parse_row(row: Mapping[str, Any], where: str) -> Document:
    """One corpus row as a ``Document``; ``where`` names it in errors."""
    doc_id = row.get("id", row.get("_id"))
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        raise UserError(f"{where}: missing or non-string 'id'")
    title = row.get("title", "")
    if not isinstance(title, str):
        raise UserError(f"{where}: 'title' must be a string")
    if "text" in row:
        text = row["text"]
    elif "contents" in row:
        text = row["contents"]
        if isinstance(text, str) and not title:
            title, text = split_contents(text)
    else:
        raise UserError(f"{where}: needs 'text' (or Search-R1 'contents')")
    if not isinstance(text, str):
        raise UserError(f"{where}: 'text' must be a string")
    return Document(id=doc_id, text=text, title=title)


def split_contents(contents: str) -> tuple[str, str]:
    """Search-R1 ``contents``: a quoted title line, then the passage."""
    head, sep, rest = contents.partition("\n")
    if not sep:
        return "", contents
    return head.strip().strip('"'), rest


def inline_documents(rows: Iterable[Any], where: str) -> list[Document]:
    """ALCE-style task docs; rows without ids are ``d1..dn`` (1-indexed)."""
    docs: list[Document] = []
    for position, row in enumerate(rows, start=1):
        label = f"{where}[{position - 1}]"
        if isinstance(row, str):
            docs.append(Document(id=f"d{position}", text=row))
            continue
        if not isinstance(row, Mapping):
            raise UserError(f"{label}: expected an object with 'text'")
        if row.get("id") is None and row.get("_id") is None:
            row = {**row, "id": f"d{position}"}
        docs.append(parse_row(row, label))
    return docs


def write_corpus(docs: Iterable[Document], path: Path) -> None:
    """Write documents as JSONL, one ``{"id","title","text"}`` per line."""
    with Path(path).open("w", encoding="utf-8") as out:
        for doc in docs:
            row = {"id": doc.id, "title": doc.title, "text": doc.text}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
