"""The scoring and summaries of `search` (HTTP page "Searching the tools"), and the argument check of `validate`
("Reading one tool"): the pure parts of the tool operations, on their own."""

from __future__ import annotations

from auto_runtime.tools.argument_check import check_arguments
from auto_runtime.tools.kinds import ListedTool
from auto_runtime.tools.tool_search import parts_of, score_of, summary_of, term_words

INVOICE = ListedTool(
    "getInvoice",
    "Reads one invoice. Then more.",
    {"type": "object", "properties": {"customer_id": {"type": "string"}}},
)


def test_words_split_at_separators_and_case_changes_in_any_case() -> None:
    assert parts_of("getInvoice") == {"getinvoice", "get", "invoice"}
    assert parts_of("graph.search-all_items") >= {"graph", "search", "all", "items"}
    assert parts_of("HTTPServer2") >= {"http", "server", "2"}
    assert term_words("INVOICE customer_ID") == {"invoice", "customer_id", "customer", "id"}


def test_a_name_scores_three_an_argument_two_and_a_description_one() -> None:
    assert score_of(INVOICE, term_words("invoice")) == 3
    assert score_of(INVOICE, term_words("customer")) == 2
    assert score_of(INVOICE, term_words("reads")) == 1
    assert score_of(INVOICE, term_words("invoice customer reads")) == 6
    assert score_of(INVOICE, term_words("zebra")) == 0


def test_the_summary_is_the_first_sentence_cut_at_300_characters() -> None:
    assert summary_of("Reads one invoice. Then more.") == "Reads one invoice."
    assert summary_of("v1.2 reads things") == "v1.2 reads things"
    assert summary_of("x" * 400) == "x" * 300


def test_arguments_are_checked_with_each_issue_at_its_pointer() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    assert check_arguments(schema, {"id": "a"}).as_json() == {"valid": True, "issues": []}
    result = check_arguments(schema, {"n": "x", "extra": 1}).as_json()
    assert result["valid"] is False
    assert sorted(issue["path"] for issue in result["issues"]) == ["/extra", "/id", "/n"]


def test_a_schema_the_checker_cannot_handle_answers_valid_null() -> None:
    lookahead = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(?=a)a+$"}}}
    result = check_arguments(lookahead, {"id": "a"}).as_json()
    assert result["valid"] is None and len(result["issues"]) == 1
    remote = {"$ref": "https://example.com/schema.json"}
    assert check_arguments(remote, {}).valid is None
    not_a_schema = {"type": 12}
    assert check_arguments(not_a_schema, {}).valid is None
