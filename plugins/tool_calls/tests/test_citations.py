"""Citation ids in answers and in tool responses."""

from __future__ import annotations

from rl_verifier_tool_calls.citations import cited_ids, returned_ids, strip_citations


def test_cited_ids_forms() -> None:
    text = "See [r1], [doc:abc-2] and [r3, doc:r4]; not [two words]."
    assert cited_ids(text) == ["r1", "abc-2", "r3", "r4"]
    assert strip_citations("1889 [r1][doc:x]").split() == ["1889"]


def test_returned_ids_from_json_fields_at_any_depth() -> None:
    content = '{"hits": [{"id": "r1"}, {"doc_id": 7, "meta": {"id": "doc:r9"}}], "id_x": "no"}'
    assert returned_ids([content]) == {"r1", "7", "r9"}


def test_returned_ids_from_markers_in_text_and_json_strings() -> None:
    assert returned_ids(["[r1] Paris is ...\n[r2] Lyon is ..."]) == {"r1", "r2"}
    assert returned_ids(['{"text": "[r5] a passage"}']) == {"r5"}
    assert returned_ids(['["a", "b"]', "no ids here", '{"id": true}']) == set()
