"""The agent under test: a tiny FAQ bot for a restaurant.

It is deterministic so the example runs anywhere; swap `faq_bot` for your real agent (any
callable taking the history and returning a reply) and the transcripts stay the same.
"""

from __future__ import annotations

import pytest

ANSWERS = {
    "open": "We are open every day from 11:00 to 23:00.",
    "vegan": "Yes! Most starters and two mains are vegan; ask for the green menu.",
    "parking": "There is free parking behind the restaurant.",
}


def faq_bot(history):
    """Answer the latest user message; `history[-1].content` is what the user just said."""
    question = history[-1].content.lower()
    for keyword, answer in ANSWERS.items():
        if keyword in question:
            return answer
    return "Sorry, I can only answer questions about opening hours, parking and the menu."


@pytest.fixture
def llm_eval_agent():
    return faq_bot
