from __future__ import annotations

import pytest

from pytest_agent_eval.voice._fixtures import normalize_for_wer, word_error_rate


@pytest.mark.parametrize(
    ("reference", "hypothesis"),
    [
        ("Book me a table for 2 tomorrow at 10am.", "Book me a table for two tomorrow at ten a.m."),
        ("Book me a table for 2 tomorrow at 10am.", "book me a table for 2 tomorrow at 10 AM"),
        ("Is the pharmacy open until 9:30 pm?", "Is the pharmacy open until nine thirty p.m.?"),
        ("My email is john.doe@example.com.", "My email is john dot doe at example dot com."),
        ("I was charged twice for order A7X9.", "I was charged twice for order A 7 X 9."),
        ("Set a reminder for the 15th.", "Set a reminder for the fifteenth."),
    ],
)
def test_spoken_and_written_forms_score_zero(reference: str, hypothesis: str) -> None:
    assert word_error_rate(reference, hypothesis) == 0.0


def test_numbers_count_one_token_per_digit() -> None:
    assert normalize_for_wer("order 48213") == "order 4 8 2 1 3"
    # One wrong digit out of 2 + 5 tokens.
    assert word_error_rate("order 48213", "order 48231") == pytest.approx(2 / 6)


def test_plain_word_errors() -> None:
    assert word_error_rate("make that four people", "make that for people") == 0.25
    assert word_error_rate("yes", "") == 1.0
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("", "noise") == 1.0
