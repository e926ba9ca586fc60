"""One reader of JSON Lines files: objects with their line numbers, a bad line named, or passed
over where a crash may have cut the last one short."""

from __future__ import annotations

import pytest

from qrag_qdrant.eval.dataset import DatasetError, load_dataset
from qrag_qdrant.text.json_lines import BadLine, json_lines


def test_objects_come_with_their_line_numbers_and_blank_lines_are_passed_over(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n  \n{"b": 2}\n', encoding="utf-8")
    assert list(json_lines(path)) == [(1, {"a": 1}), (4, {"b": 2})]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": 1}\n{"a": \n', "line 2: not JSON"),
        ('{"a": 1}\n[1, 2]\n', "line 2: not a JSON object"),
        ('{"a": 1}\n"text"\n', "line 2: not a JSON object"),
    ],
)
def test_a_bad_line_is_named_or_passed_over_when_asked(tmp_path, text, why):
    path = tmp_path / "rows.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadLine, match=f"rows.jsonl, {why}"):
        list(json_lines(path))
    assert list(json_lines(path, skip_invalid=True)) == [(1, {"a": 1})]


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff\xfe"}\n')
    with pytest.raises(BadLine, match="rows.jsonl, line 2: not UTF-8 text"):
        list(json_lines(path))


def test_a_data_set_with_a_bad_line_says_which_in_one_line(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("text")
    (tmp_path / "questions.jsonl").write_text('{"question": "q?", "answers": ["a"]}\n{"question": \n')
    with pytest.raises(DatasetError, match=r"questions.jsonl, line 2: not JSON"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text('{"question": "q?", "answers": ["a"]}\n{"answers": ["b"]}\n')
    with pytest.raises(DatasetError, match=r"questions.jsonl:2: not a qa question"):
        load_dataset(tmp_path)
